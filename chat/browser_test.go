package chat

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserChat signs up, sends a message and sees the reply in headless
// Chromium, then checks the database holds no plaintext of it.
func TestBrowserChat(t *testing.T) {
	exe := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(c); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
	}
	forEachDB(t, func(t *testing.T, ta *testApp) {
		if strings.HasSuffix(t.Name(), "postgres") {
			t.Skip("one browser run is enough; the API tests cover PostgreSQL")
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()))
		actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
		defer cancel()
		ctx, cancel := chromedp.NewContext(actx)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
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
