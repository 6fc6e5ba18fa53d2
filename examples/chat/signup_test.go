package chat

import (
	"testing"
)

// A sign-up whose e-mail cannot be queued is not recorded: the link and
// the pending sign-up are written in one transaction, and the request
// fails rather than answering "check your e-mail" for a mail that will
// never come.
func TestSignupWithoutMail(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ta.client(t).signup("alice@example.com")
		if _, err := ta.db.Exec(`ALTER TABLE outbox RENAME TO outbox_away`); err != nil {
			t.Fatal(err)
		}
		probe := ta.client(t)
		for _, email := range []string{"alice@example.com", "bob@example.com"} {
			if code := probe.do("POST", "/api/signup", credentials{email, "a password to remember"}, nil); code < 500 {
				t.Errorf("signup %s without an outbox: %d, want a server error", email, code)
			}
		}
		var pending int
		if err := ta.db.QueryRow(`SELECT COUNT(*) FROM signups`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending != 0 {
			t.Fatalf("%d pending sign-ups recorded without their e-mail", pending)
		}
		if _, err := ta.db.Exec(`ALTER TABLE outbox_away RENAME TO outbox`); err != nil {
			t.Fatal(err)
		}
		if code := probe.do("POST", "/api/signup", credentials{"bob@example.com", "a password to remember"}, nil); code != 202 {
			t.Fatalf("signup with the outbox back: %d", code)
		}
		if verificationLink(t, ta.app, "bob@example.com") == "" {
			t.Fatal("no link once the outbox is back")
		}
	})
}
