package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/ledger"
)

// TestLedgerRecoverCommand: forgets made with --forget-journal, then the
// database is rolled back to before two of them (a lossy failover looks
// the same). Every command refuses the ledger with a hint naming both
// causes and the recovery; 'ward ledger recover' without the journal
// refuses, naming the loss; a declined prompt writes nothing; with the
// journal and the answer it forgets both again and lists the column for a
// census, which --check then clears; --json --yes reports a second run
// with nothing to do.
func TestLedgerRecoverCommand(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	jdir := filepath.Join(t.TempDir(), "journal")
	if _, err := db.Exec(`CREATE TABLE msgs (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	kr := c.loadKeyring(t)
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	s, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: l, Namespace: "users", TTL: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	col, err := field.NewColumn(kr, "msgs", "body", field.WithEncoding(field.Text), field.Bind("user_id"), field.PerSubject(s, "user_id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordColumns(ctx, kr, ledger.ColumnOf(col, "id")); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"alice", "bob", "carol"} {
		ct, err := col.SealString(field.RowInt(int64(i+1)).With(u), u+"'s message")
		if err != nil {
			t.Fatal(err)
		}
		db.Exec(`INSERT INTO msgs VALUES (?, ?, ?)`, i+1, u, ct)
	}
	tables := []string{ledger.DefaultTable, subject.DefaultKeysTable, subject.DefaultTombstonesTable}
	for _, tb := range tables {
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE bak_%s AS SELECT * FROM %s`, tb, tb)); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, e := c.run("subject", "forget", "--db", url, "--namespace", "users", "--forget-journal", jdir, "alice", "bob"); code != 0 {
		t.Fatalf("forget: %d %q %q", code, out, e)
	}
	for _, tb := range tables {
		if _, err := db.Exec(fmt.Sprintf(`DELETE FROM %s; INSERT INTO %s SELECT * FROM bak_%s`, tb, tb, tb)); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, e := c.run("ledger", "--db", url); code != 1 || !strings.Contains(e, "older than its anchor") || !strings.Contains(e, "run 'ward ledger recover --db URL --forget-journal DIR'") {
		t.Fatalf("ward ledger after the rollback names the recovery: %d %q", code, e)
	}
	if code, _, e := c.run("subject", "audit", "--db", url); code != 1 || !strings.Contains(e, "ward ledger recover") || !strings.Contains(e, "failover") {
		t.Fatalf("audit after the rollback: %d %q", code, e)
	}
	if code, out, e := c.run("ledger", "recover", "--db", url); code != 1 || !strings.Contains(e, "2 in users") || !strings.Contains(out, "2 lost") {
		t.Fatalf("recover without the journal: %d %q %q", code, out, e)
	}
	if code, _, e := c.runStdin("no\n", "ledger", "recover", "--db", url, "--forget-journal", jdir); code != 1 || !strings.Contains(e, "not confirmed") {
		t.Fatalf("recover, declined: %d %q", code, e)
	}
	code, out, e := c.runStdin("recover\n", "ledger", "recover", "--db", url, "--forget-journal", jdir)
	if code != 0 || !strings.Contains(out, "2 to forget again") || !strings.Contains(out, "msgs.body may hold older values") || !strings.Contains(out, "2 subjects forgotten again") ||
		!strings.Contains(out, "users: by identity, 2 journal records of forgets that committed, 0 that may have, 0 that did not") {
		t.Fatalf("recover: %d %q %q", code, out, e)
	}
	for _, u := range []string{"alice", "bob"} {
		if gone, err := s.IsForgotten(ctx, u); err != nil || !gone {
			t.Fatalf("%s after the recovery: %v %v", u, gone, err)
		}
	}
	if code, out, e := c.run("ledger", "--db", url); code != 0 || !strings.Contains(out, "msgs.body may hold older values since a recovery") || !strings.Contains(out, "recovered ") || !strings.Contains(out, "durability: SQLite: no replication") {
		t.Fatalf("ledger after the recovery: %d %q %q", code, out, e)
	} else if m := regexp.MustCompile(`run its census, '(ward encrypt-column [^']*)'`).FindStringSubmatch(out); m == nil || !strings.Contains(m[1], "--table msgs --column body --key id --bind user_id --text --check") {
		t.Fatalf("the census to run, with the column's flags: %q", out)
	} else if code, out, e := c.run(strings.Fields(strings.TrimPrefix(m[1], "ward "))...); code != 0 || !strings.Contains(e, "taken off the ledger's list") {
		t.Fatalf("the census as printed: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("ledger", "--db", url, "--forget-journal", jdir); code != 0 || !strings.Contains(out, "forgets are also kept in the forget journal") {
		t.Fatalf("ledger --forget-journal: %d %q %q", code, out, e)
	}
	if code, _, e := c.run("ledger", "--db", url, "--forget-journal", filepath.Join(jdir, "nothing")); code != 2 || !strings.Contains(e, "is not a folder") {
		t.Fatalf("ledger --forget-journal of no folder: %d %q", code, e)
	}
	if code, out, e := c.run("ledger", "--db", url); code != 0 || strings.Contains(out, "may hold older values") {
		t.Fatalf("the column is still on the list after its census passed: %d %q %q", code, out, e)
	}
	code, out, e = c.run("ledger", "recover", "--db", url, "--forget-journal", jdir, "--json", "--yes")
	var rep recoveryReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Recovered || rep.Plan.JournalFiles != 1 || len(rep.Plan.Recheck) != 0 {
		t.Fatalf("a second recover --json: %d %q %q", code, out, e)
	}
	// Rolled back again: --accept-loss without the journal brings the
	// service back, the two forgets lost (and said so).
	for _, tb := range tables {
		if _, err := db.Exec(fmt.Sprintf(`DELETE FROM %s; INSERT INTO %s SELECT * FROM bak_%s`, tb, tb, tb)); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, e := c.run("ledger", "recover", "--db", url, "--accept-loss", "--yes"); code != 0 || !strings.Contains(out, "2 lost") || !strings.Contains(out, "recovered: 0 subjects") {
		t.Fatalf("recover --accept-loss: %d %q %q", code, out, e)
	}
	if code, _, e := c.run("ledger", "--db", url); code != 0 {
		t.Fatalf("ledger after --accept-loss: %d %q", code, e)
	}
	if gone, err := s.IsForgotten(ctx, "alice"); err != nil || gone {
		t.Fatalf("alice after an accepted loss: %v %v", gone, err)
	}
}
