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
	kr, err := keyring.Load(ctx, c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
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
	open := func() (string, error) {
		g, err := keyring.LoadGrant(ctx, out, mk)
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
	if pt, err := open(); err != nil || pt != "alice's body" {
		t.Fatalf("the reader opens alice's body: %q %v", pt, err)
	}
	code, stdout, e = c.run("grant", "revoke", id[1], "--db", url, "--offline")
	if code != 0 || !strings.Contains(stdout, "wraps of 1 keys of namespace users") {
		t.Fatalf("revoke: %d %q %q", code, stdout, e)
	}
	if _, err := open(); !errors.Is(err, field.ErrSubjectKeyMissing) {
		t.Fatalf("after the revocation: %v", err)
	}
}
