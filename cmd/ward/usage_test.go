package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestKeyUsage: a job adds the values it sealed to the database's
// key-usage table; 'ward keyring list --db' shows each key's count
// (--json too) and warns of a key past 2^30 seals, naming the rotation —
// here a count a database writer raised, as the table is advisory.
func TestKeyUsage(t *testing.T) {
	const n = 6400
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "usage.db")
	tx, _ := db.Begin()
	tx.Exec(`CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= n; i++ {
		tx.Exec(`INSERT INTO notes (note_id, body) VALUES (?, ?)`, i, fmt.Sprint("Note ", i))
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--quiet"); code != 0 {
		t.Fatalf("encrypt-column: %d %q %q", code, out, e)
	}
	code, out, e := c.run("keyring", "list", "--db", url, "--json")
	var doc keyListJSON
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Keys) != 1 || doc.Keys[0].Seals == nil {
		t.Fatalf("keyring list --db --json: %d %q %q", code, out, e)
	}
	// An estimate (1 seal in 64 counts 64): never 0 after 6,400 seals but
	// with probability e^-100, and far below three times the count.
	if s := *doc.Keys[0].Seals; s == 0 || s > 3*n {
		t.Fatalf("%d values sealed, %d counted", n, s)
	}
	if code, out, _ := c.run("keyring", "list"); code != 0 || strings.Contains(out, "SEALS") {
		t.Fatalf("keyring list without --db: %d %q", code, out)
	}
	if _, err := db.Exec(`UPDATE ward_key_usage SET seals = ?`, int64(1)<<30); err != nil {
		t.Fatal(err)
	}
	code, out, e = c.run("keyring", "list", "--db", url)
	if code != 0 || !strings.Contains(out, "SEALS") || !strings.Contains(out, "~1073741824") ||
		!strings.Contains(e, "ward: warning: key "+doc.Keys[0].ID) || !strings.Contains(e, "rotate it out with 'ward keyring rotate --db URL'") {
		t.Fatalf("keyring list --db past 2^30: %d %q %q", code, out, e)
	}
}
