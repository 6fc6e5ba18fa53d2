package main

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestGrantPerSubjectColumn: 'ward grant --scope messages.body' on a
// column sealed under users' keys (as the ledger records it) derives the
// grant for the users namespace and writes the wraps of the keys that
// sealed before it; the reader opens alice's body through the library
// with the file; 'ward grant revoke' removes the wraps at once, so that a
// reader of the live database opens nothing more.
func TestGrantPerSubjectColumn(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	kr := c.loadKeyring(t)
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	if err := l.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	s, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: l, Namespace: "users"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := field.NewColumn(kr, "messages", "body", field.Bind("user_id"), field.PerSubject(s, "user_id"))
	if err := l.RecordColumns(ctx, kr, ledger.ColumnOf(body, "id")); err != nil {
		t.Fatal(err)
	}
	ct, err := body.SealString(field.RowInt(1).With("alice"), "alice's body")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, body BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO messages VALUES (1, 'alice', ?)`, ct); err != nil {
		t.Fatal(err)
	}
	readerKey := filepath.Join(c.dir, "reader.mk")
	if code, _, e := c.run("keyring", "gen-master-key", "--out", readerKey); code != 0 {
		t.Fatal(e)
	}
	out := filepath.Join(c.dir, "bodies.grant")
	code, stdout, e := c.run("grant", "--db", url, "--scope", "messages.body", "--to-master-key-file", readerKey, "--out", out)
	id := regexp.MustCompile(`grant (g-[0-9a-f]{16})`).FindStringSubmatch(stdout)
	if code != 0 || id == nil || !strings.Contains(stdout, "wraps of 1 keys of namespace users") {
		t.Fatalf("grant: %d %q %q", code, stdout, e)
	}
	mk, _ := local.Load(readerKey, nil)
	open := func(file string) (string, error) {
		g, err := keyring.LoadGrant(ctx, file, mk)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := subject.NewGrantKeys(subject.Config{DB: db, Dialect: field.SQLite}, g, "messages", "body")
		if err != nil {
			t.Fatal(err)
		}
		col, err := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(keys, "user_id"))
		if err != nil {
			t.Fatal(err)
		}
		return col.OpenString(field.RowInt(1).With("alice"), ct)
	}
	if pt, err := open(out); err != nil || pt != "alice's body" {
		t.Fatalf("the reader opens alice's body: %q %v", pt, err)
	}
	// A rotation moves the wraps to the new key, as it re-seals the
	// columns: the grant of the older key opens them no more; a new one does.
	if code, stdout, e := c.run("keyring", "rotate", "--db", url, "--wait", "10s"); code != 0 || !strings.Contains(stdout, "wraps of 1 keys of namespace users") {
		t.Fatalf("rotate: %d %q %q", code, stdout, e)
	}
	if _, err := open(out); err == nil {
		t.Fatal("a grant of the older key opened a wrap written after the rotation")
	}
	out2 := filepath.Join(c.dir, "bodies2.grant")
	code, stdout, e = c.run("grant", "--db", url, "--scope", "messages.body", "--to-master-key-file", readerKey, "--out", out2)
	id2 := regexp.MustCompile(`grant (g-[0-9a-f]{16})`).FindStringSubmatch(stdout)
	if code != 0 || id2 == nil {
		t.Fatalf("second grant: %d %q %q", code, stdout, e)
	}
	if pt, err := open(out2); err != nil || pt != "alice's body" {
		t.Fatalf("a grant after the rotation: %q %v", pt, err)
	}
	// Revoking the first keeps the second's wraps; revoking the second
	// removes them at once.
	if code, _, e := c.run("grant", "revoke", id[1], "--db", url, "--offline"); code != 0 {
		t.Fatalf("revoke: %d %q", code, e)
	}
	if pt, err := open(out2); err != nil || pt != "alice's body" {
		t.Fatalf("the live grant after another's revocation: %q %v", pt, err)
	}
	code, stdout, e = c.run("grant", "revoke", id2[1], "--db", url, "--offline")
	if code != 0 || !strings.Contains(stdout, "wraps of 1 keys of namespace users") {
		t.Fatalf("revoke: %d %q %q", code, stdout, e)
	}
	if _, err := open(out2); !errors.Is(err, field.ErrSubjectKeyMissing) {
		t.Fatalf("after the revocation: %v", err)
	}
}
