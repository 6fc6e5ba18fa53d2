package chat

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/keycore"
)

// resetLink returns the token of the newest reset link for email.
func resetLink(t testing.TB, app *Service, email string) string {
	return outboxLink(t, app, email, "#reset=")
}

func (c *client) messages(conv int64) []Message {
	c.t.Helper()
	var ms []Message
	if code := c.do("GET", fmt.Sprintf("/api/conversations/%d/messages", conv), nil, &ms); code != 200 {
		c.t.Fatalf("messages: %d", code)
	}
	return ms
}

// TestPrivateMode: a user turns private mode on; from then on the
// database, keyring file and master key — a fresh service process with no
// session — open none of their titles and messages, while the user's own
// session opens them through any process; the assistant refuses to read
// without the session's key; log-in costs one Argon2 call; password
// change, reset with the recovery code and reset without it behave as the
// service says.
func TestPrivateMode(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		ta.app.server.recovery = true
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "before private"}, nil); code != 201 {
			t.Fatalf("send: %d", code)
		}
		bob := ta.client(t)
		bobConv := bob.signup("bob@example.com")
		var me map[string]bool
		alice.do("GET", "/api/me", nil, &me)
		if me["private"] {
			t.Fatal("private before asking")
		}
		if code := alice.do("POST", "/api/private", map[string]any{"password": "wrong", "recovery": true}, nil); code != 403 {
			t.Fatalf("private mode with a wrong password: %d", code)
		}
		var on map[string]string
		if code := alice.do("POST", "/api/private", map[string]any{"password": "correct horse", "recovery": true}, &on); code != 200 || len(on["recovery_code"]) != 39 {
			t.Fatalf("private mode: %d %v", code, on)
		}
		code := on["recovery_code"]
		alice.do("GET", "/api/me", nil, &me)
		if !me["private"] || !me["unlocked"] || !me["recovery"] {
			t.Fatalf("me: %v", me)
		}
		if ms := alice.messages(conv.ID); len(ms) != 2 || ms[0].Body != "before private" {
			t.Fatalf("alice in her session: %+v", ms)
		}

		// A second process of the fleet serves alice's session.
		other, err := Open(ctx, ta.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		ts2 := httptest.NewServer(other.Handler())
		defer ts2.Close()
		alice2 := &client{t: t, hc: alice.hc, ts: ts2, app: other}
		if ms := alice2.messages(conv.ID); len(ms) != 2 || ms[0].Body != "before private" || ms[1].Error != "" {
			t.Fatalf("alice through another process: %+v", ms)
		}

		// The operator: database, keyring file and master key, no session.
		uid := userID(t, ta, "alice@example.com")
		for _, st := range []*store{ta.app.store, other.store} {
			ms, err := st.messages(ctx, uid, conv.ID, 50)
			if err != nil || len(ms) != 2 || ms[0].Body != "" || ms[0].Error != messageLockedError {
				t.Fatalf("the operator's read of alice: %+v %v", ms, err)
			}
			cs, _ := st.conversations(ctx, uid)
			if len(cs) != 1 || cs[0].Title != "" || cs[0].Error != titleLockedError {
				t.Fatalf("the operator's read of alice's titles: %+v", cs)
			}
			if _, err := st.addMessage(ctx, uid, conv.ID, "user", "planted"); !errors.Is(err, field.ErrSubjectLocked) {
				t.Fatalf("the operator sealing for alice: %v", err)
			}
		}
		if ms := bob.messages(bobConv.ID); len(ms) != 0 {
			t.Fatalf("bob: %+v", ms)
		}

		// The assistant reads only inside a session that holds the key.
		if _, err := ta.db.Exec(`DELETE FROM ` + subject.DefaultSessionsTable); err != nil {
			t.Fatal(err)
		}
		var refusal apiError
		if c := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "are you there?"}, &refusal); c != 403 || refusal.Code != codeLocked {
			t.Fatalf("the assistant without the session's key: %d %+v", c, refusal)
		}
		if ms := alice.messages(conv.ID); ms[0].Error != messageLockedError {
			t.Fatalf("reading without the session's key: %+v", ms)
		}

		// Logging in again: one Argon2 call, and the key is back.
		before := ta.app.server.hasher.Limiter().Stats().Admitted
		if c := alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); c != 200 {
			t.Fatalf("login: %d", c)
		}
		if n := ta.app.server.hasher.Limiter().Stats().Admitted - before; n != 1 {
			t.Fatalf("a private user's log-in took %d Argon2 calls", n)
		}
		if ms := alice.messages(conv.ID); len(ms) != 2 || ms[1].Body != "before private" && ms[0].Body != "before private" {
			t.Fatalf("after logging in again: %+v", ms)
		}
		var reply []Message
		if c := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "written while private"}, &reply); c != 201 || len(reply) != 2 {
			t.Fatalf("send while private: %d", c)
		}

		// Logging out closes it for every process.
		alice.do("POST", "/api/logout", nil, nil)
		var n int
		ta.db.QueryRow(`SELECT COUNT(*) FROM ` + subject.DefaultSessionsTable).Scan(&n)
		if n != 0 {
			t.Fatalf("%d session copies of keys after log-out", n)
		}

		// Password change re-wraps the key.
		alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil)
		if c := alice.do("POST", "/api/password", map[string]string{"old": "correct horse", "new": "battery staple"}, nil); c != 200 {
			t.Fatalf("password change: %d", c)
		}
		alice.do("POST", "/api/logout", nil, nil)
		if c := alice.do("POST", "/api/login", credentials{"alice@example.com", "battery staple"}, nil); c != 200 {
			t.Fatalf("login with the new password: %d", c)
		}
		if ms := alice.messages(conv.ID); ms[0].Error != "" {
			t.Fatalf("after a password change: %+v", ms)
		}

		// Reset through the outbox: refused until the loss is confirmed or
		// the recovery code given; the code keeps everything.
		anon := ta.client(t)
		if c := anon.do("POST", "/api/reset", map[string]string{"email": "alice@example.com"}, nil); c != 202 {
			t.Fatalf("reset request: %d", c)
		}
		link := resetLink(t, ta.app, "alice@example.com")
		var refused apiError
		if c := anon.do("POST", "/api/reset/confirm", map[string]any{"token": link, "password": "third password"}, &refused); c != 409 || refused.Code != codeDataLoss {
			t.Fatalf("reset of a private account without code: %d %+v", c, refused)
		}
		if c := anon.do("POST", "/api/reset/confirm", map[string]any{"token": link, "password": "third password", "recovery_code": "AAAA-BBBB"}, nil); c != 403 {
			t.Fatalf("reset with a wrong code: %d", c)
		}
		link2 := link
		if c := anon.do("POST", "/api/reset/confirm", map[string]any{"token": link2, "password": "third password", "recovery_code": code}, nil); c != 200 {
			// the wrong code rolled back: the link is still valid
			t.Fatalf("reset with the code: %d", c)
		}
		if c := alice.do("GET", "/api/conversations", nil, nil); c != 401 {
			t.Fatalf("a session survived the reset: %d", c)
		}
		alice.do("POST", "/api/login", credentials{"alice@example.com", "third password"}, nil)
		if ms := alice.messages(conv.ID); len(ms) < 2 || ms[0].Error != "" {
			t.Fatalf("after a reset with the code: %+v", ms)
		}

		// A reset without the code, confirmed: what came before is lost,
		// and said so; what comes after works.
		anon.do("POST", "/api/reset", map[string]string{"email": "alice@example.com"}, nil)
		var done map[string]any
		if c := anon.do("POST", "/api/reset/confirm", map[string]any{"token": resetLink(t, ta.app, "alice@example.com"), "password": "fourth password", "accept_loss": true}, &done); c != 200 || done["lost_keys"] != float64(2) { // the version from before private mode, and the fresh one
			t.Fatalf("reset accepting the loss: %d %v", c, done)
		}
		alice.do("POST", "/api/login", credentials{"alice@example.com", "fourth password"}, nil)
		if ms := alice.messages(conv.ID); ms[0].Error != lostError {
			t.Fatalf("after a reset without the code: %+v", ms)
		}
		var fresh Conversation
		if c := alice.do("POST", "/api/conversations", map[string]string{"title": "new start"}, &fresh); c != 201 {
			t.Fatalf("a new conversation after the reset: %d", c)
		}
		var cs []Conversation
		alice.do("GET", "/api/conversations", nil, &cs)
		titles := map[string]string{}
		for _, c := range cs {
			titles[c.Title] = c.Error
		}
		if len(cs) != 2 || titles["new start"] != "" || titles[""] != lostError {
			t.Fatalf("conversations after the reset: %+v", cs)
		}
	})
}

// userID returns the ID of the account with this address.
func userID(t *testing.T, ta *testApp, email string) int64 {
	t.Helper()
	var id int64
	if err := ta.db.QueryRow(ta.app.store.q(`SELECT id FROM users WHERE email_idx = ?`), ta.app.store.emailKey(email)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestDeleteAccount: deleting an account forgets the user's key — every
// title and message of the user, in the live database and in a copy taken
// before, stops opening — while other users are untouched; the sweep
// deletes the rows.
func TestDeleteAccount(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		alice, bob := ta.client(t), ta.client(t)
		ac, bc := alice.signup("alice@example.com"), bob.signup("bob@example.com")
		for _, c := range []struct {
			cl   *client
			conv int64
		}{{alice, ac.ID}, {bob, bc.ID}} {
			if code := c.cl.do("POST", fmt.Sprintf("/api/conversations/%d/messages", c.conv), map[string]string{"body": "hello"}, nil); code != 201 {
				t.Fatalf("send: %d", code)
			}
		}
		uid := userID(t, ta, "alice@example.com")
		type row struct {
			id, conv int64
			role     string
			raw      []byte
		}
		var copyTaken []row
		rows, _ := ta.db.Query(ta.app.store.q(`SELECT id, conversation_id, role, body FROM messages WHERE user_id = ?`), uid)
		for rows.Next() {
			var r row
			rows.Scan(&r.id, &r.conv, &r.role, &r.raw)
			copyTaken = append(copyTaken, r)
		}
		rows.Close()
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "wrong"}, nil); c != 403 {
			t.Fatalf("delete with a wrong password: %d", c)
		}
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil); c != 200 {
			t.Fatalf("delete: %d", c)
		}
		if c := alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); c != 401 {
			t.Fatalf("login after delete: %d", c)
		}
		for _, r := range copyTaken {
			_, err := ta.app.store.cols.body.Open(field.RowInt(r.id).With(r.conv, uid, r.role), mustParse(t, r.raw))
			if !errors.Is(err, field.ErrSubjectErased) {
				t.Fatalf("a copied message of a deleted user: %v", err)
			}
		}
		if ms := bob.messages(bc.ID); len(ms) != 2 || ms[0].Body != "hello" {
			t.Fatalf("bob after alice's deletion: %+v", ms)
		}
		// A database writer plants a tombstone for bob (its MAC forged as
		// 00): the sweep deletes on verified tombstones only.
		if _, err := ta.db.Exec(ta.app.store.q(`INSERT INTO ward_subject_tombstones (namespace, subject, forgotten_at, epoch, mac) VALUES (?, ?, ?, 0, '00')`),
			subjectNamespace, fmt.Sprint(userID(t, ta, "bob@example.com")), time.Now().Unix()); err != nil {
			t.Fatal(err)
		}
		if _, err := ta.app.SweepSessions(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		ta.db.QueryRow(ta.app.store.q(`SELECT COUNT(*) FROM messages WHERE user_id = ?`), uid).Scan(&n)
		if n != 0 {
			t.Fatalf("%d messages of a deleted user after the sweep", n)
		}
		ta.db.QueryRow(`SELECT COUNT(*) FROM messages`).Scan(&n)
		if n != 2 {
			t.Fatalf("the sweep left %d of bob's 2 messages", n)
		}
	})
}

func mustParse(t *testing.T, raw []byte) field.Ciphertext {
	t.Helper()
	ct, err := field.ParseCiphertext(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := keycore.SubjectKeyVersion(raw); !ok {
		t.Fatal("a message not under its user's key")
	}
	return ct
}

// TestRecoveryNotOffered: a service started without a recovery code says
// so in /api/me, and refuses a request for private mode with a code
// (recovery_not_offered) rather than turning it on without one; asked
// without a code, it turns private mode on.
func TestRecoveryNotOffered(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		if !strings.HasSuffix(t.Name(), "sqlite") {
			t.Skip("the handler's choice, not the database's")
		}
		alice := ta.client(t)
		alice.signup("alice@example.com")
		var me map[string]any
		alice.do("GET", "/api/me", nil, &me)
		if me["recovery_offered"] != false {
			t.Fatalf("/api/me: %v", me)
		}
		var refused map[string]string
		if code := alice.do("POST", "/api/private", map[string]any{"password": "correct horse", "recovery": true}, &refused); code != 409 || refused["code"] != codeNoRecovery {
			t.Fatalf("private mode with a code the service does not offer: %d %v", code, refused)
		}
		alice.do("GET", "/api/me", nil, &me)
		if me["private"] != false {
			t.Fatal("private mode turned on without the code asked for")
		}
		if code := alice.do("POST", "/api/private", map[string]any{"password": "correct horse"}, nil); code != 200 {
			t.Fatalf("private mode without a code: %d", code)
		}
		ta.app.server.recovery = true
		alice.do("GET", "/api/me", nil, &me)
		if me["recovery_offered"] != true || me["private"] != true {
			t.Fatalf("/api/me with recovery offered: %v", me)
		}
	})
}
