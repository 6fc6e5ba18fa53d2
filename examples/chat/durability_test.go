package chat

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/kms/local"
)

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestForgetJournal: without a forget journal (and with no synchronous
// standby) the service warns at start that deletions a failover or
// restore loses come back; with ForgetJournal it says deletions are
// journaled, and a deleted account is in the journal — as a keyed hash,
// its ID nowhere in the folder.
func TestForgetJournal(t *testing.T) {
	forEachURL(t, func(t *testing.T, url string) {
		dir := t.TempDir()
		var without, with syncBuffer
		cfg := Config{DB: url, KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(), Limits: testLimits,
			Log: slog.New(slog.NewTextHandler(&without, nil))}
		ta := newTestApp(t, cfg)
		if s := without.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "come back") {
			t.Fatalf("start without a journal logs: %s", s)
		}
		ta.app.Close()
		cfg.ForgetJournal, cfg.Log = filepath.Join(dir, "forgets"), slog.New(slog.NewTextHandler(&with, nil))
		app, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		if s := with.String(); !strings.Contains(s, "forget journal") || strings.Contains(s, "level=WARN msg=durability") {
			t.Fatalf("start with a journal logs: %s", s)
		}
		ta = &testApp{app: app, cfg: cfg, db: app.db}
		ta.ts = httptest.NewServer(app.Handler())
		defer ta.ts.Close()
		alice := ta.client(t)
		alice.signup("alice@example.com")
		uid := userID(t, ta, "alice@example.com")
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil); c != 200 {
			t.Fatalf("delete: %d", c)
		}
		st, err := app.ledger.Verified(context.Background(), app.kr)
		if err != nil {
			t.Fatal(err)
		}
		r, err := forgetlog.Read(app.kr, st.Database, cfg.ForgetJournal)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Forgotten(subjectNamespace, fmt.Sprint(uid)); !ok || r.Count(subjectNamespace) != 1 {
			t.Fatalf("the journal does not record the deletion: %+v", r)
		}
	})
}

// TestAccountDeletionAtomic: a deletion that fails after the forget's
// statements (here: the forget journal cannot be written) leaves the
// account whole — it logs in and reads its messages — and a retry
// deletes it; an account left behind by a deletion that crashed between
// the forget and the account row (as earlier releases could) is deleted
// by the sweep, and its address can sign up again.
func TestAccountDeletionAtomic(t *testing.T) {
	forEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		dir := t.TempDir()
		jdir := filepath.Join(dir, "forgets")
		ta := newTestApp(t, Config{DB: url, KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(), Limits: testLimits, ForgetJournal: jdir})
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "hello"}, nil); code != 201 {
			t.Fatalf("send: %d", code)
		}
		// The journal's folder is replaced by a file: its append fails.
		if err := os.RemoveAll(jdir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jdir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		ta.app.journal.Close() // drop its open file: the next forget creates one
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil); c != 500 {
			t.Fatalf("a deletion whose journal fails: %d", c)
		}
		if ms := alice.messages(conv.ID); len(ms) != 2 || ms[0].Body != "hello" {
			t.Fatalf("after a failed deletion: %+v", ms)
		}
		os.Remove(jdir)
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil); c != 200 {
			t.Fatalf("the retried deletion: %d", c)
		}

		// A zombie, as a crash between forget and deletion left them.
		bob := ta.client(t)
		bob.signup("bob@example.com")
		uid := userID(t, ta, "bob@example.com")
		if err := ta.app.store.subjects.Forget(ctx, fmt.Sprint(uid)); err != nil {
			t.Fatal(err)
		}
		if _, err := ta.app.SweepSessions(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		ta.db.QueryRow(ta.app.store.q(`SELECT COUNT(*) FROM users WHERE id = ?`), uid).Scan(&n)
		if n != 0 {
			t.Fatal("the sweep left a forgotten user's account")
		}
		ta.client(t).signup("bob@example.com") // the address is free again
	})
}

// TestPrivateModeNotice: the log-in answer carries the account's mode
// and, when the page last saw it private and it no longer is (here an
// operator deleted the user's key rows, with no journal to refuse it), a
// notice that says so; the same log-in from a page that saw it ordinary,
// or saw nothing, carries none.
func TestPrivateModeNotice(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		alice := ta.client(t)
		alice.signup("alice@example.com")
		if code := alice.do("POST", "/api/private", map[string]any{"password": "correct horse"}, nil); code != 200 {
			t.Fatalf("private: %d", code)
		}
		yes, no := true, false
		var res map[string]any
		login := func(seen *bool) map[string]any {
			t.Helper()
			res = nil
			body := map[string]any{"email": "alice@example.com", "password": "correct horse"}
			if seen != nil {
				body["private_seen"] = *seen
			}
			if code := ta.client(t).do("POST", "/api/login", body, &res); code != 200 {
				t.Fatalf("log-in: %d", code)
			}
			return res
		}
		if r := login(&yes); r["private"] != true || r["notice"] != nil {
			t.Fatalf("log-in while private: %v", r)
		}
		uid := userID(t, ta, "alice@example.com")
		if _, err := ta.db.Exec(ta.app.store.q(`DELETE FROM ward_subject_keys WHERE subject = ?`), fmt.Sprint(uid)); err != nil {
			t.Fatal(err)
		}
		if r := login(&yes); r["private"] != false || !strings.Contains(fmt.Sprint(r["notice"]), "private mode was turned off") {
			t.Fatalf("log-in after private mode was turned off: %v", r)
		}
		for _, seen := range []*bool{&no, nil} {
			if r := login(seen); r["notice"] != nil {
				t.Fatalf("log-in from a page that saw %v: %v", seen, r)
			}
		}
	})
}

// TestPrivatePending: a private user's message under a keyring key (as
// an earlier release sealed it, found by a migration after she went
// private) is counted as pending in /api/me, and her next log-in seals it
// under her own key: pending 0, and it no longer opens with the keyring
// alone.
func TestPrivatePending(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "old"}, nil); code != 201 {
			t.Fatalf("send: %d", code)
		}
		if code := alice.do("POST", "/api/private", map[string]any{"password": "correct horse"}, nil); code != 200 {
			t.Fatalf("private: %d", code)
		}
		uid := userID(t, ta, "alice@example.com")
		// Her first message as an earlier release sealed it: under a
		// keyring key, bound to its row and owners.
		old, err := field.NewColumn(ta.app.kr, "messages", "body", field.Bind("conversation_id", "user_id", "role"))
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		ta.db.QueryRow(ta.app.store.q(`SELECT id FROM messages WHERE user_id = ? AND role = 'user'`), uid).Scan(&id)
		ct, _ := old.SealString(field.RowInt(id).With(conv.ID, uid, "user"), "old")
		ta.db.Exec(ta.app.store.q(`UPDATE messages SET body = ? WHERE id = ?`), ct, id)
		var me map[string]any
		alice.do("GET", "/api/me", nil, &me)
		if me["private"] != true || me["pending"] != float64(1) {
			t.Fatalf("me before the next log-in: %v", me)
		}
		again := ta.client(t)
		if code := again.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("log-in: %d", code)
		}
		again.do("GET", "/api/me", nil, &me)
		if me["pending"] != float64(0) {
			t.Fatalf("me after the log-in: %v", me)
		}
		var now field.Ciphertext
		ta.db.QueryRow(ta.app.store.q(`SELECT body FROM messages WHERE id = ?`), id).Scan(&now)
		if _, err := ta.app.store.cols.body.OpenString(field.RowInt(id).With(conv.ID, uid, "user"), now); err == nil {
			t.Fatal("the message still opens with the keyring alone")
		}
	})
}
