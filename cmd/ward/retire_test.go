package main

import (
	"strings"
	"testing"

	"github.com/wardlab/ward/internal/pgcluster"
)

// TestRetireWaitsForReplicas: with a replica whose replay is paused,
// 'keyring retire --replica' waits --replica-wait, then refuses and
// changes nothing; once the replica replays, the same command retires.
// A --replica that replicates none of the --db databases is refused.
func TestRetireWaitsForReplicas(t *testing.T) {
	p, s := pgcluster.PairForTest(t, "ward_replica")
	other := pgcluster.ForTest(t)
	c := newCLI(t)
	c.newKeyring(t)
	if code, _, e := c.run("keyring", "add", "--db", p.URL); code != 0 {
		t.Fatal(e)
	}
	code, out, e := c.run("keyring", "list")
	if code != 0 {
		t.Fatal(e)
	}
	var added string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "decrypt-only") {
			added = f[0]
		}
	}
	if added == "" {
		t.Fatalf("no decrypt-only key listed: %q", out)
	}
	sdb, _, err := openDB(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if _, err := sdb.Exec(`SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	// A write after the pause: the replica is now behind its primary.
	pdb, _, err := openDB(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	if _, err := pdb.Exec(`CREATE TABLE after_pause (x int)`); err != nil {
		t.Fatal(err)
	}
	if code, _, e := c.run("keyring", "retire", added, "--db", p.URL, "--replica", other.URL); code != 2 || !strings.Contains(e, "replicates none of the --db databases") {
		t.Fatalf("retire with a replica of another server: %d %q", code, e)
	}
	code, _, e = c.run("keyring", "retire", added, "--db", p.URL, "--replica", s.URL, "--replica-wait", "1s")
	if code != 1 || !strings.Contains(e, "has not replayed") || !strings.Contains(e, "nothing was changed") {
		t.Fatalf("retire with a paused replica: %d %q", code, e)
	}
	if _, out, _ := c.run("keyring", "list"); !strings.Contains(out, added) {
		t.Fatal("a refused retire removed the key")
	}
	if _, err := sdb.Exec(`SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	if code, out, e := c.run("keyring", "retire", added, "--db", p.URL, "--replica", s.URL); code != 0 || !strings.Contains(e, "has replayed") {
		t.Fatalf("retire once the replica replays: %d %q %q", code, out, e)
	}
}

// TestRetireSweepsEveryColumn: a value sealed into a table the ledger does
// not record ('ward encrypt' into memos.body, as an application's own
// code would) holds its key back after a rotation: retire names the
// column and changes nothing, where it used to retire the key and leave
// the value unreadable for good. --skip-table leaves the table out (a
// copy kept to be made unreadable), and the key is retired.
func TestRetireSweepsEveryColumn(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	ct := strings.TrimSpace(c.sealedIn(t, "memos", "body", "1", "remember the milk"))
	if _, err := db.Exec(`CREATE TABLE memos (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO memos VALUES (1, ?)`, ct); err != nil {
		t.Fatal(err)
	}
	_, list, _ := c.run("keyring", "list")
	var old string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "primary") {
			old = f[0]
		}
	}
	if code, _, e := c.run("keyring", "rotate", "--db", url, "--wait", "10s"); code != 0 {
		t.Fatal(e)
	}
	code, _, e := c.run("keyring", "retire", old, "--db", url)
	if code != 1 || !strings.Contains(e, "1 values in memos.body are sealed under it, a column the ledger does not record") {
		t.Fatalf("retire with a value in an unrecorded column: %d %q", code, e)
	}
	if code, out, e := c.runStdin(ct, "decrypt", "--table", "memos", "--column", "body", "--row", "1"); code != 0 || out != "remember the milk" {
		t.Fatalf("the value after a refused retire: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("keyring", "retire", old, "--db", url, "--skip-table", "MEMOS"); code != 0 || !strings.Contains(out, "retired") {
		t.Fatalf("retire --skip-table: %d %q %q", code, out, e)
	}
}

// sealedIn is 'ward encrypt' of text into table.col at row.
func (c *cliEnv) sealedIn(t *testing.T, table, col, row, text string) string {
	t.Helper()
	code, out, e := c.runStdin(text, "encrypt", "--table", table, "--column", col, "--row", row)
	if code != 0 {
		t.Fatalf("encrypt: %q", e)
	}
	return out
}
