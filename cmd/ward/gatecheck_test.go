package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestCheckAgreesWithTheWriteGate: beside a registered process that reads
// ciphertext v3 but not v4 (a release before v4), the job writes v3 and
// calls the column's v3 values up to date; '--check' used to call every
// one of them "to re-seal", for ever, so the documented "a passing --check
// takes the column off the list" could never be done. The census now
// applies the job's write gate: it passes, and says why v3 counts.
func TestCheckAgreesWithTheWriteGate(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	kr := c.loadKeyring(t)
	before := fleetgate.New()
	before.Declare(fleetgate.Ciphertext(3), fleetgate.Sealed("notes", "title"))
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite, Gate: before}).Join(ctx, kr, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	col, err := field.NewColumn(kr, "notes", "title", field.WithEncoding(field.Text), field.WithForms(before))
	if err != nil || col.WriteVersion() != 3 {
		t.Fatalf("the release before writes v%d, %v", col.WriteVersion(), err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT)`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ct, _ := col.SealString(field.RowInt(int64(i)), fmt.Sprint("title ", i))
		if _, err := db.Exec(`INSERT INTO notes VALUES (?, ?)`, i, ct); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"reseal", "--db", url, "--table", "notes", "--column", "title", "--text", "--key", "id"}
	if code, out, e := c.run(args...); code != 0 || !strings.Contains(out, "3 already up to date") {
		t.Fatalf("reseal beside the release before: %d %q %q", code, out, e)
	}
	code, out, e := c.run(append(args, "--check")...)
	if code != 0 || !strings.Contains(out, "done") || !strings.Contains(e, "counting ciphertext v3 as current") {
		t.Fatalf("reseal --check beside the release before: %d %q %q", code, out, e)
	}
}

// TestEncryptFollowsTheFleet: 'ward encrypt --db' seals a value for a
// database whose fleet holds a process of the release before v4 in
// ciphertext v3, which that process opens (without --db: v4, which it
// cannot); once the process leaves, v4.
func TestEncryptFollowsTheFleet(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	kr := c.loadKeyring(t)
	before := fleetgate.New()
	before.Declare(fleetgate.Ciphertext(3), fleetgate.Sealed("notes", "title"))
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite, Gate: before}).Join(ctx, kr, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := field.NewColumn(kr, "notes", "title", field.WithEncoding(field.Text), field.WithForms(before))
	args := []string{"encrypt", "--table", "notes", "--column", "title", "--row", "7"}
	code, ct, e := c.runStdin("for the release before", append(args, "--db", url)...)
	if code != 0 || !strings.HasPrefix(ct, "w3:") || !strings.Contains(e, "writing ciphertext v3") {
		t.Fatalf("encrypt --db beside the release before: %d %q %q", code, ct, e)
	}
	parsed, err := field.ParseCiphertext([]byte(strings.TrimSpace(ct)))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := old.OpenString(field.RowString("7"), parsed); err != nil || pt != "for the release before" {
		t.Fatalf("the release before opens it: %q %v", pt, err)
	}
	if _, ct, _ = c.runStdin("x", args...); !strings.HasPrefix(ct, "w4:") {
		t.Fatalf("without --db: %q", ct)
	}
	m.Leave(ctx)
	if code, ct, e = c.runStdin("x", append(args, "--db", url)...); code != 0 || !strings.HasPrefix(ct, "w4:") {
		t.Fatalf("encrypt --db once the fleet reads v4: %d %q %q", code, ct, e)
	}
	if code, _, e := c.runStdin("x", "encrypt", "--context", "c", "--db", url); code != 2 || !strings.Contains(e, "--db needs --table") {
		t.Fatalf("--db without --table: %d %q", code, e)
	}
}

// TestRefusalHint: a ledger's verdict gets the hint for what it means; an
// error that is no verdict (the database did not answer: a Galera node
// reconfiguring, outside the primary component) never reads as a wrong
// keyring file.
func TestRefusalHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", ledger.ErrReplayed), "ward ledger recover"},
		{fmt.Errorf("x: %w", keyring.ErrWrongKeyring), "is this the keyring file"},
		{fmt.Errorf("ledger: reading the ledger: %w", sqltable.NodeNotReady(errors.New("Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction"))), "this Galera node is outside the primary component"},
		{fmt.Errorf("ledger: reading the ledger: %w", sqltable.NodeNotReady(errors.New("Error 1047 (08S01): WSREP has not yet prepared node for application use"))), "retry, or use another node"},
		{fmt.Errorf("ledger: reading the ledger: %w", errors.New("dial unix: connection refused")), "the database did not answer"},
		{fmt.Errorf("ledger: %w", ledger.ErrStandby), "names the setting"},
	} {
		if got := refusalHint(tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q", tc.err, got)
		}
	}
}

// TestInterruptedWriteSaysSo: a write whose commit the database did not
// confirm gets the "may have been applied" hint, naming how to find out
// and the recovery a failover then needs; any other error does not; and a
// commit that waits is announced on stderr, naming the synchronous
// standby (integration/topology TestInterruptedForget makes both happen
// on a real primary whose synchronous standby is down).
func TestInterruptedWriteSaysSo(t *testing.T) {
	if h := commitHint(fmt.Errorf("subject: forgetting users/u1: %w", fmt.Errorf("%w: context canceled", sqltable.ErrCommitUnknown))); !strings.Contains(h, "may have been applied") || !strings.Contains(h, "ward ledger recover") {
		t.Fatalf("hint: %q", h)
	}
	if h := commitHint(errors.New("connection refused")); h != "" {
		t.Fatalf("hint for another error: %q", h)
	}
	var stderr strings.Builder
	a := &app{stderr: &stderr}
	a.commitWaitNotice(5 * time.Second)
	if !strings.Contains(stderr.String(), "has not confirmed a commit for 5s") || !strings.Contains(stderr.String(), "synchronous_standby_names") {
		t.Fatalf("notice: %q", stderr.String())
	}
}
