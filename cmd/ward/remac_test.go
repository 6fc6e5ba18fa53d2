package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestKeyringRemacCommand: 'ward keyring remac' moves the v1 row MACs of
// a column its ledger records to v2 under the current epoch; while the
// fleet opened integrity:v2 less than 10 s before it says v1 MACs are
// still accepted, and once that is older it marks the table, after which a
// v1 MAC does not verify. It needs --db.
func TestKeyringRemacCommand(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	if code, _, e := c.run("keyring", "remac"); code != 2 || !strings.Contains(e, "--db") {
		t.Fatalf("without --db: %d %q", code, e)
	}
	kr, err := keyring.Load(ctx, c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
	url, db := c.sqlite(t, "app.db")
	defer db.Close()
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	col := ledger.MACColumn{Table: "sessions", Column: "mac", Key: "id", Covers: []string{"id", "user_id"}}
	if _, err := db.Exec(`CREATE TABLE sessions (id INTEGER PRIMARY KEY, user_id INTEGER, mac BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.RowMAC(ctx, kr, col, nil); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 rows of the release before
	v1, _ := field.NewRowMAC(kr, col.Table, col.Covers...)
	insert := func(id int64) []byte {
		tag, _ := v1.Sum(id, id*10)
		if _, err := db.Exec(`INSERT INTO sessions VALUES (?, ?, ?)`, id, id*10, tag); err != nil {
			t.Fatal(err)
		}
		return tag
	}
	for id := range int64(3) {
		insert(id + 1)
	}
	code, out, e := c.run("keyring", "remac", "--db", url)
	if code != 0 || !strings.Contains(out, "sessions.mac: 3 row MACs moved") || !strings.Contains(out, "v1 MACs still accepted") {
		t.Fatalf("first pass: %d %q %q", code, out, e)
	}
	old := insert(4) // written by a process that had not learned the form yet
	err = lg.ChangeForms(ctx, kr, func(fs []ledger.Form) []ledger.Form {
		then := time.Now().Add(-time.Minute).UnixMilli()
		return append(fs, ledger.Form{Name: fleetgate.IntegrityV2, Release: fleetgate.ReleaseOf(fleetgate.IntegrityV2), Since: then, Opened: then})
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, e = c.run("keyring", "remac", "--db", url)
	if code != 0 || !strings.Contains(out, "1 row MACs moved") || !strings.Contains(out, "3 already there") || !strings.Contains(out, "v1 MACs refused") {
		t.Fatalf("second pass: %d %q %q", code, out, e)
	}
	rows, err := db.Query(`SELECT mac FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tag []byte
		rows.Scan(&tag)
		if len(tag) != field.RowMACSizeV2 {
			t.Fatalf("a %d-byte MAC left", len(tag))
		}
	}
	rows.Close()
	st, err := lg.Verified(ctx, kr)
	if err != nil || !slices.Contains(st.Marks, field.RowMACMovedMark("sessions")) {
		t.Fatalf("the ledger's marks: %v %v", st, err)
	}
	now, err := lg.RowMAC(ctx, kr, col, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := now.Verify(old, int64(4), int64(40)); err == nil {
		t.Fatal("a v1 MAC verifies after the table was marked")
	}
}
