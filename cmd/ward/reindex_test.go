package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/ledger"
)

// TestKeyringReindexCommand: 'ward keyring reindex' moves a blind index
// with a spare column to the current epoch after a rotation (every user
// found by a process that follows the ledger, the old column empty),
// names the indexes it cannot move (no spare column; an application's own
// normaliser) and leaves them, picks indexes by --table, --column and
// --index, gives up a wait for a process that does not follow after
// --wait naming it, and continues when run again.
func TestKeyringReindexCommand(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	if code, _, e := c.run("keyring", "reindex"); code != 2 || !strings.Contains(e, "--db") {
		t.Fatalf("without --db: %d %q", code, e)
	}
	url, db := c.sqlite(t, "app.db")
	defer db.Close()
	kr := c.loadKeyring(t)
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email BLOB, email_idx BLOB UNIQUE, email_idx2 BLOB UNIQUE, nick_idx BLOB, own_idx BLOB, own_idx2 BLOB)`); err != nil {
		t.Fatal(err)
	}
	col, err := field.NewColumn(kr, "users", "email")
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.RecordColumns(ctx, kr, ledger.ColumnOf(col, "id")); err != nil {
		t.Fatal(err)
	}
	spec := ledger.IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}
	x, err := lg.Indexer(ctx, kr, spec, field.Fold, ledger.IndexerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two indexes the command leaves: one without a spare column, one with
	// the application's own normaliser.
	if _, err := lg.Index(ctx, kr, ledger.IndexColumn{Table: "users", Column: "email", Name: "nick", Index: "nick_idx"}, field.NFC); err != nil {
		t.Fatal(err)
	}
	own := field.Normalizer{Name: "app-trim", Version: 1, Func: strings.TrimSpace}
	if _, err := lg.Indexer(ctx, kr, ledger.IndexColumn{Table: "users", Column: "email", Name: "own", Index: "own_idx", Spare: "own_idx2"}, own, ledger.IndexerOptions{}); err != nil {
		t.Fatal(err)
	}
	emails := []string{"a@example.com", "B@example.com", "c@example.com"}
	for i, e := range emails {
		tx, _ := db.BeginTx(ctx, nil)
		ct, _ := col.Seal(field.RowInt(int64(i)), []byte(e))
		a, b, err := x.WriteTx(ctx, tx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO users (id, email, email_idx, email_idx2) VALUES (?, ?, ?, ?)`, i, ct, a, b); err != nil {
			t.Fatal(err)
		}
		tx.Commit()
	}
	first := kr.Primary().ID
	if code, out, e := c.run("keyring", "reindex", "--db", url, "--index", "email"); code != 0 || !strings.Contains(out, "under the current epoch "+first.String()) {
		t.Fatalf("before a rotation: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("keyring", "rotate", "--db", url); code != 0 {
		t.Fatalf("rotate: %d %q %q", code, out, e)
	}
	for _, args := range [][]string{{"--table", "orders"}, {"--column", "name"}, {"--table", "users", "--index", "phone"}} {
		if code, _, e := c.run(append([]string{"keyring", "reindex", "--db", url}, args...)...); code != 1 || !strings.Contains(e, "records no blind index matching") {
			t.Fatalf("reindex %v: %d %q", args, code, e)
		}
	}
	// A process that joined and follows nothing: the first phase's wait
	// gives up after --wait, naming it.
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite}).Join(ctx, kr, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, e := c.run("keyring", "reindex", "--db", url, "--table", "users", "--column", "email", "--index", "email", "--wait", "1500ms"); code != 1 || !strings.Contains(e, m.ID()) || strings.Contains(out, "nick") {
		t.Fatalf("reindex with a process that does not follow: %d %q %q", code, out, e)
	}
	m.Leave(ctx)
	kr = c.loadKeyring(t)
	second := kr.Primary().ID
	code, out, e := c.run("keyring", "reindex", "--db", url)
	want := fmt.Sprintf("blind index email of users.email moved from epoch %v to epoch %v: 3 rows indexed, now in email_idx2", first, second)
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "nick of users.email has no spare column") || !strings.Contains(out, `own normaliser "app-trim"`) {
		t.Fatalf("reindex: %d %q %q", code, out, e)
	}
	x, err = lg.Indexer(ctx, kr, spec, field.Fold, ledger.IndexerOptions{})
	if err != nil || x.Record().Epoch != second || x.Record().Slot != 1 {
		t.Fatalf("the index after: %+v %v", x.Record(), err)
	}
	for i, e := range emails {
		var id int64
		var old []byte
		_, b := x.Lookup(strings.ToUpper(e))
		if err := db.QueryRow(`SELECT id, email_idx FROM users WHERE email_idx2 = ?`, b).Scan(&id, &old); err != nil || id != int64(i) || old != nil {
			t.Fatalf("%s: %d %x %v", e, id, old, err)
		}
	}
}
