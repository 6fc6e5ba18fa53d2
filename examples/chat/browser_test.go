package chat

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wardlab/ward/internal/browsertest"
)

// TestBrowserChat signs up, sends a message and sees the reply in headless
// Chromium, then checks the database holds no plaintext of it. The message
// is typed and sent while the conversation is still loading (its request
// held by the browser until then): it waits on the page, marked as
// sending, and is delivered once the conversation is there. On a service
// that offers no recovery code the page's private-mode choice says so.
func TestBrowserChat(t *testing.T) {
	skipShort(t)
	forEachDB(t, func(t *testing.T, ta *testApp) {
		if strings.HasSuffix(t.Name(), "postgres") {
			t.Skip("one browser run is enough; the API tests cover PostgreSQL")
		}
		ctx := browsertest.Start(t)
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		run := func(a chromedp.Action[chromedp.Void]) {
			t.Helper()
			if _, err := chromedp.Run(ctx, a); err != nil {
				failWithPage(t, ctx, err)
			}
		}
		secret := "私の秘密の予定 42"
		run(chromedp.Navigate(ta.ts.URL + "/"))
		run(chromedp.SendKeys("#email", "carol@example.com"))
		run(chromedp.SendKeys("#password", "correct horse battery"))
		run(chromedp.Click("#signup"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("check your e-mail")`, chromedp.WithPollingTimeout(0)))
		// The link from the outbox, followed in the same browser.
		token := verificationLink(t, ta.app, "carol@example.com")
		if token == "" {
			t.Fatal("no link in the outbox")
		}
		run(chromedp.Navigate(ta.ts.URL + "/#verify=" + token))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("the account exists")`, chromedp.WithPollingTimeout(0)))
		held := holdHistory(t, ctx)
		run(chromedp.SetValue("#email", "carol@example.com"))
		run(chromedp.SetValue("#password", "correct horse battery"))
		run(chromedp.Click("#login"))
		run(chromedp.WaitVisible("#send"))
		var release func()
		select {
		case release = <-held:
		case <-ctx.Done():
			t.Fatal("the conversation's messages were never requested")
		}
		run(chromedp.SendKeys("#text", secret))
		run(chromedp.Click("#send-button"))
		run(chromedp.Poll[chromedp.Void](`document.querySelector("#log .pending") !== null`, chromedp.WithPollingTimeout(0)))
		release()
		waitReply(t, ctx, ta)
		log, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("log").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log, "You: "+secret) || !strings.Contains(log, "stand-in assistant") || strings.Contains(log, "Not sent") || strings.Contains(log, "sending…") {
			t.Fatalf("page shows %q", log)
		}
		run(chromedp.Click("#account summary"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("private-recovery").disabled && !document.getElementById("private-recovery").checked && document.getElementById("recovery-offer").textContent.includes("offers no recovery code")`, chromedp.WithPollingTimeout(0)))
		// The access log shows the assistant's reading of the message.
		run(chromedp.Click("#access summary"))
		run(chromedp.Poll[chromedp.Void](`document.querySelectorAll("#access-list li").length === 1 && document.getElementById("access-list").textContent.includes("the assistant read 1 message(s)")`, chromedp.WithPollingTimeout(0)))
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

// TestBrowserAccount drives the account page in headless Chromium: private
// mode with a recovery code, a forgotten password reset through the
// e-mailed link (refused without the code, which the page then asks to
// confirm; kept with it), the earlier message still readable after the
// reset, and the account's deletion.
func TestBrowserAccount(t *testing.T) {
	skipShort(t)
	forEachDB(t, func(t *testing.T, ta *testApp) {
		if strings.HasSuffix(t.Name(), "postgres") {
			t.Skip("one browser run is enough; the API tests cover PostgreSQL")
		}
		ta.app.server.recovery = true
		ctx := browsertest.Start(t)
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		// The deletion asks for confirmation: accept it.
		dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
		go func() {
			for _, err := range dialogs {
				if err != nil {
					return
				}
				chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}
		}()
		run := func(a chromedp.Action[chromedp.Void]) {
			t.Helper()
			if _, err := chromedp.Run(ctx, a); err != nil {
				failWithPage(t, ctx, err)
			}
		}
		text := func(id string) string {
			t.Helper()
			s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("`+id+`").textContent`))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		const email = "dana@example.com"
		login := func(password string) {
			run(chromedp.SetValue("#email", email))
			run(chromedp.SetValue("#password", password))
			run(chromedp.Click("#login"))
			run(chromedp.WaitVisible("#send"))
		}
		run(chromedp.Navigate(ta.ts.URL + "/"))
		run(chromedp.SetValue("#email", email))
		run(chromedp.SetValue("#password", "first password"))
		run(chromedp.Click("#signup"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("check your e-mail")`, chromedp.WithPollingTimeout(0)))
		run(chromedp.Navigate(ta.ts.URL + "/#verify=" + verificationLink(t, ta.app, email)))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("the account exists")`, chromedp.WithPollingTimeout(0)))
		login("first password")
		run(chromedp.SendKeys("#text", "note to self"))
		run(chromedp.Click("#send-button"))
		waitReply(t, ctx, ta)

		// Private mode, with its recovery code shown once.
		run(chromedp.Click("#account summary"))
		run(chromedp.SetValue("#account-password", "first password"))
		run(chromedp.Click("#private"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("account-state").textContent.includes("Private mode is on, with a recovery code")`, chromedp.WithPollingTimeout(0)))
		_, code, ok := strings.Cut(text("account-note"), "write it down: ")
		if !ok || len(code) != 39 {
			t.Fatalf("no recovery code on the page: %q", text("account-note"))
		}

		// Forgotten: the e-mailed link, refused without the code, kept with it.
		run(chromedp.Click("#logout"))
		run(chromedp.WaitVisible("#forgot"))
		run(chromedp.SetValue("#email", email))
		run(chromedp.Click("#forgot"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("link to reset")`, chromedp.WithPollingTimeout(0)))
		token := outboxLink(t, ta.app, email, "#reset=")
		if token == "" {
			t.Fatal("no reset link in the outbox")
		}
		run(chromedp.Navigate(ta.ts.URL + "/#reset=" + token))
		run(chromedp.WaitVisible("#reset-button"))
		run(chromedp.SetValue("#reset-password", "second password"))
		run(chromedp.Click("#reset-button"))
		run(chromedp.WaitVisible("#reset-loss-label"))
		if !strings.Contains(text("reset-error"), "recovery code") {
			t.Fatalf("reset without the code: %q", text("reset-error"))
		}
		run(chromedp.SetValue("#reset-code", code))
		run(chromedp.Click("#reset-button"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("reset-note").textContent.includes("log in with the new password")`, chromedp.WithPollingTimeout(0)))
		login("second password")
		run(chromedp.Poll[chromedp.Void](`document.getElementById("log").textContent.includes("You: note to self")`, chromedp.WithPollingTimeout(0)))

		// Deleted: back to the log-in form; the account is gone.
		run(chromedp.Click("#account summary"))
		run(chromedp.SetValue("#account-password", "second password"))
		run(chromedp.Click("#delete-account"))
		run(chromedp.WaitVisible("#login"))
		run(chromedp.Poll[chromedp.Void](`document.getElementById("auth-note").textContent.includes("dana@example.com is deleted")`, chromedp.WithPollingTimeout(0)))
		var n int
		if err := ta.db.QueryRow(`SELECT COUNT(*) FROM users`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d users after deleting the account (%v)", n, err)
		}
	})
}

// holdHistory holds the browser's first request for a conversation's
// messages: the channel yields, once that request is waiting, the
// function that lets it go on. Every other request passes.
func holdHistory(t *testing.T, ctx context.Context) <-chan func() {
	t.Helper()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/api/conversations/*/messages"}}}); err != nil {
		t.Fatal(err)
	}
	held := make(chan func(), 1)
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	go func() {
		first := true
		for ev, err := range paused {
			if err != nil {
				return
			}
			cont := func() {
				chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
			if first && ev.Request.Method == "GET" {
				first = false
				held <- cont
				continue
			}
			cont()
		}
	}()
	return held
}

// waitReply waits for the assistant's reply on the page; if none comes in
// 90 s it fails saying what the page and the database hold, so that a
// slow or failed request is told from a page that never sent it.
func waitReply(t *testing.T, ctx context.Context, ta *testApp) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.WaitVisible(".msg.assistant")); err == nil {
		return
	}
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	var n int
	ta.db.QueryRow(`SELECT count(*) FROM messages`).Scan(&n)
	t.Fatalf("no reply on the page after 90 s; %d messages stored; the page shows %q", n, page)
}

// failWithPage fails the test with err and, when the browser still
// answers, the page's text: which request failed, or that none came back.
func failWithPage(t *testing.T, ctx context.Context, err error) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	page, perr := chromedp.Run(pctx, chromedp.Evaluate[string](`document.body.innerText`))
	if perr != nil {
		t.Fatalf("%v (the page did not answer either: %v)", err, perr)
	}
	t.Fatalf("%v; the page shows %q", err, page)
}

// skipShort skips a browser test under -short, as .ci/run's race stage
// runs: a whole UI flow in Chromium, with Argon2id log-ins under the race
// detector on a loaded machine, outlasted its deadline there (the API
// tests run the same handlers under the race detector).
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a browser flow: not under -short (the race stage); the tests stage runs it")
	}
}
