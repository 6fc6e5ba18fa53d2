package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// accessOf returns a user's page of the access log.
func accessOf(t *testing.T, c *client) []AccessEntry {
	t.Helper()
	var out struct{ Entries []AccessEntry }
	if code := c.do("GET", "/api/access", nil, &out); code != 200 {
		t.Fatalf("GET /api/access: %d", code)
	}
	return out.Entries
}

func send(t *testing.T, c *client, conv int64, body string) int {
	t.Helper()
	return c.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv), map[string]string{"body": body}, nil)
}

// TestAccessLog: each reading by the assistant is on its user's page, and
// only theirs; anchoring counts the entries in the ledger, a rotation
// re-MACs them, and the audit finds the log whole.
func TestAccessLog(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		alice, bob := ta.client(t), ta.client(t)
		conv := alice.signup("alice@example.com")
		bob.signup("bob@example.com")
		for i := range 3 {
			if code := send(t, alice, conv.ID, fmt.Sprintf("message %d", i)); code != 201 {
				t.Fatalf("send: %d", code)
			}
		}
		es := accessOf(t, alice)
		if len(es) != 3 || es[0].Reader != ReaderAssistant || es[0].Conversation != conv.ID || es[0].Messages != 5 || es[2].Messages != 1 || es[0].Anchored {
			t.Fatalf("alice's access log: %+v", es)
		}
		if es := accessOf(t, bob); len(es) != 0 {
			t.Fatalf("bob sees %+v", es)
		}
		if n, err := ta.app.AnchorAccess(ctx); err != nil || n != 3 {
			t.Fatalf("anchor: %d %v", n, err)
		}
		if n, err := ta.app.AnchorAccess(ctx); err != nil || n != 0 {
			t.Fatalf("anchor again: %d %v", n, err)
		}
		if es := accessOf(t, alice); !es[0].Anchored || !es[2].Anchored {
			t.Fatalf("not anchored: %+v", es)
		}
		send(t, alice, conv.ID, "after the anchor")
		if err := ta.app.Rotate(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		a, err := ta.app.AuditAccess(ctx)
		if err != nil || a.Anchored != 3 || a.Unanchored != 1 {
			t.Fatalf("audit: %+v %v", a, err)
		}
		if es := accessOf(t, alice); len(es) != 4 {
			t.Fatalf("after the rotation: %+v", es)
		}
	})
}

// TestAccessLogDatabaseWriter: a database writer who plants an entry,
// moves one to another user, or deletes an anchored one is caught; one who
// deletes the unanchored tail is not (SECURITY.md says so).
func TestAccessLogDatabaseWriter(t *testing.T) {
	ctx := context.Background()
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "chat.db"), KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: local.Generate()})
	alice := ta.client(t)
	conv := alice.signup("alice@example.com")
	for range 3 {
		send(t, alice, conv.ID, "hello")
	}
	if _, err := ta.app.AnchorAccess(ctx); err != nil {
		t.Fatal(err)
	}
	send(t, alice, conv.ID, "the tail")
	send(t, alice, conv.ID, "the tail's end")
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := ta.db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	broken := func(what string) {
		t.Helper()
		if _, err := ta.app.AuditAccess(ctx); !errors.Is(err, ErrAccessBroken) {
			t.Fatalf("%s: audit %v", what, err)
		}
	}
	// Moved to another user: its MAC fails, on the page and in the audit.
	exec(`UPDATE access_log SET user_id = user_id + 1 WHERE seq = 2`)
	broken("an entry moved to another user")
	exec(`UPDATE access_log SET user_id = user_id - 1 WHERE seq = 2`)
	exec(`UPDATE access_log SET messages = 0 WHERE seq = 1`)
	if es := accessOf(t, alice); len(es) != 5 || es[4].Error != accessIntegrityError || es[4].Messages != 0 || es[3].Error != "" {
		t.Fatalf("an altered entry on the page: %+v", es)
	}
	broken("an altered entry")
	exec(`UPDATE access_log SET messages = 1 WHERE seq = 1`)
	if _, err := ta.app.AuditAccess(ctx); err != nil {
		t.Fatalf("put back: %v", err)
	}
	// Planted: a copy of entry 5 as entry 6, with its MAC.
	exec(`INSERT INTO access_log SELECT seq + 1, user_id, at, reader, conversation_id, messages, head, mac FROM access_log WHERE seq = 5`)
	broken("a planted entry")
	exec(`DELETE FROM access_log WHERE seq = 6`)
	// Entry 4 from another timeline (a restore that forked the log): its
	// MAC holds, entry 5 does not continue it.
	fork := accessRow{seq: 4, user: mustUser(t, ta.app, "alice@example.com"), at: 1, reader: ReaderAssistant, conversation: conv.ID, messages: 1}
	var head3 []byte
	if err := ta.db.QueryRow(`SELECT head FROM access_log WHERE seq = 3`).Scan(&head3); err != nil {
		t.Fatal(err)
	}
	fork.head = ledger.Tally{Count: 3, Head: head3}.Add(accessIdentity(fork)).Head
	mac, err := ta.app.store.cols.accessMAC.Sum(fork.macValues()...)
	if err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE access_log SET at = ?, messages = ?, head = ?, mac = ? WHERE seq = 4`, fork.at, fork.messages, fork.head, mac)
	broken("an entry from a fork")
	// The unanchored tail deleted: not seen (what the anchor interval bounds).
	exec(`DELETE FROM access_log WHERE seq >= 4`)
	if a, err := ta.app.AuditAccess(ctx); err != nil || a.Anchored != 3 || a.Unanchored != 0 {
		t.Fatalf("the tail deleted: %+v %v", a, err)
	}
	// An anchored entry deleted: caught, and the log goes on from the
	// anchor.
	exec(`DELETE FROM access_log WHERE seq = 2`)
	broken("an anchored entry deleted")
	exec(`DELETE FROM access_log WHERE seq = 3`)
	broken("the anchored tail deleted")
	if code := send(t, alice, conv.ID, "still served"); code != 201 {
		t.Fatalf("send after the break: %d", code)
	}
	if n, err := ta.app.AnchorAccess(ctx); err != nil || n != 1 {
		t.Fatalf("anchoring after the break: %d %v", n, err)
	}
}

// TestAccessLogRefusesUnrecorded: when the entry cannot be written, the
// assistant does not read, and the user is told.
func TestAccessLogRefusesUnrecorded(t *testing.T) {
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "chat.db"), KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: local.Generate()})
	alice := ta.client(t)
	conv := alice.signup("alice@example.com")
	if _, err := ta.db.Exec(`DROP TABLE access_log`); err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "hello"}, &e); code != 503 || e.Error != msgAccessLog {
		t.Fatalf("send: %d %q", code, e.Error)
	}
}

// TestAccessAnchorEvery: the service anchors on its own, every
// Config.AccessAnchorEvery, and at Close.
func TestAccessAnchorEvery(t *testing.T) {
	ctx := context.Background()
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "chat.db"), KeyringPath: filepath.Join(t.TempDir(), "kr.json"),
		KeyService: local.Generate(), AccessAnchorEvery: 20 * time.Millisecond})
	alice := ta.client(t)
	conv := alice.signup("alice@example.com")
	send(t, alice, conv.ID, "hello")
	for deadline := time.Now().Add(time.Minute); ; {
		if es := accessOf(t, alice); len(es) == 1 && es[0].Anchored {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never anchored")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The default interval is a minute: only Close anchors this entry.
	cfg := ta.cfg
	cfg.AccessAnchorEvery = 0
	ta.app.Close()
	app, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.store.access.record(ctx, 1, ReaderAssistant, conv.ID, 1); err != nil {
		t.Fatal(err)
	}
	if a, err := app.AuditAccess(ctx); err != nil || a.Anchored != 1 || a.Unanchored != 1 {
		t.Fatalf("before Close: %+v %v", a, err)
	}
	app.Close()
	app, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if a, err := app.AuditAccess(ctx); err != nil || a.Anchored != 2 || a.Unanchored != 0 {
		t.Fatalf("after Close: %+v %v", a, err)
	}
}
