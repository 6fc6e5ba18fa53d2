package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/ledger"
)

// TestJobRecordedIndex: 'ward encrypt-column --index' fills in a blind
// index the ledger records as the application computes it — v2 under its
// epoch, bound to the database — where it wrote v1 values before, which
// no look-up found; it refuses the index's spare column, a normalisation
// other than the recorded one, and an index in the middle of a re-key.
func TestJobRecordedIndex(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	defer db.Close()
	kr := c.loadKeyring(t)
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, email_idx BLOB UNIQUE, email_idx2 BLOB UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	emails := []string{"a@example.com", "B@example.com", "c@example.com"}
	for i, e := range emails {
		if _, err := db.Exec(`INSERT INTO users (id, email) VALUES (?, ?)`, i+1, e); err != nil {
			t.Fatal(err)
		}
	}
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	x, err := lg.Indexer(ctx, kr, ledger.IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}, field.Fold, ledger.IndexerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job := []string{"encrypt-column", "--db", url, "--table", "users", "--column", "email", "--text"}
	if code, _, e := c.run(append(job, "--index", "email_idx2")...); code != 2 || !strings.Contains(e, "spare column") {
		t.Fatalf("--index of the spare column: %d %q", code, e)
	}
	if code, _, e := c.run(append(job, "--index", "email_idx", "--index-normalize", "nfc")...); code != 2 || !strings.Contains(e, "records blind index email of users.email as fold") {
		t.Fatalf("another normalisation: %d %q", code, e)
	}
	code, _, e := c.run(append(job, "--index", "email_idx", "--index-normalize", "fold", "--quiet")...)
	if code != 0 || !strings.Contains(e, "v2 under epoch") {
		t.Fatalf("encrypt-column --index: %d %q", code, e)
	}
	for i, e := range emails {
		var idx []byte
		want, _ := x.Lookup(strings.ToUpper(e))
		if err := db.QueryRow(`SELECT email_idx FROM users WHERE id = ?`, i+1).Scan(&idx); err != nil || !bytes.Equal(idx, want) {
			t.Fatalf("%s: index %x, the application looks up %x (%v)", e, idx, want, err)
		}
	}
	_, err = lg.ChangeIndex(ctx, kr, x.Record(), func(c *ledger.IndexColumn) error {
		c.Rekey = &ledger.IndexRekey{Epoch: kr.Primary().ID, Phase: ledger.RekeyBoth}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, e := c.run(append(job, "--index", "email_idx")...); code != 1 || !strings.Contains(e, "being re-keyed") {
		t.Fatalf("during a re-key: %d %q", code, e)
	}
}
