package chat

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardlab/ward/internal/browsertest"
)

// TestBrowserChat signs up, sends a message and sees the reply in headless
// Chromium, then checks the database holds no plaintext of it.
func TestBrowserChat(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		if strings.HasSuffix(t.Name(), "postgres") {
			t.Skip("one browser run is enough; the API tests cover PostgreSQL")
		}
		ctx := browsertest.Start(t)
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		run := func(a chromedp.Action[chromedp.Void]) {
			t.Helper()
			if _, err := chromedp.Run(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		secret := "私の秘密の予定 42"
		run(chromedp.Navigate(ta.ts.URL + "/"))
		run(chromedp.SendKeys("#email", "carol@example.com"))
		run(chromedp.SendKeys("#password", "correct horse battery"))
		run(chromedp.Click("#signup"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("check your e-mail")`))
		// The link from the outbox, followed in the same browser.
		token := verificationLink(t, ta.app, "carol@example.com")
		if token == "" {
			t.Fatal("no link in the outbox")
		}
		run(chromedp.Navigate(ta.ts.URL + "/#verify=" + token))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("the account exists")`))
		run(chromedp.SetValue("#email", "carol@example.com"))
		run(chromedp.SetValue("#password", "correct horse battery"))
		run(chromedp.Click("#login"))
		run(chromedp.WaitVisible("#send"))
		run(chromedp.SendKeys("#text", secret))
		run(chromedp.Click("#send-button"))
		run(chromedp.WaitVisible(".msg.assistant"))
		log, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("log").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log, "You: "+secret) || !strings.Contains(log, "stand-in assistant") {
			t.Fatalf("page shows %q", log)
		}
		rows, _ := ta.db.Query(`SELECT body FROM messages`)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var raw []byte
			rows.Scan(&raw)
			n++
			if strings.Contains(string(raw), "秘密") {
				t.Fatal("plaintext in the database")
			}
		}
		if n != 2 {
			t.Fatalf("%d messages stored", n)
		}
	})
}
