package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestFleetRotation: two application processes (keyrings loaded from the
// shared file, watching it, registered in the database) read and write a
// ward column while 'ward keyring rotate --db' adds, waits, promotes,
// waits and re-encrypts: not one value fails to open. A third process
// that never reloads (frozen) holds the next rotation back, named, until
// the operator skips it.
func TestFleetRotation(t *testing.T) {
	c := newCLI(t)
	run, mk, krPath := c.run, c.mk, c.krPath
	dbURL, db := c.sqlite(t, "app.db")
	dialect := field.SQLite
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 50; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, ?)`, i, fmt.Sprint("note ", i))
	}
	c.newKeyring(t)
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatal(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := &fleet.Registry{DB: db, Dialect: dialect}
	var failures, reads, writes atomic.Int64
	var wg sync.WaitGroup
	start := func(watch bool) *fleet.Member {
		kr, err := keyring.Load(ctx, krPath, mk)
		if err != nil {
			t.Fatal(err)
		}
		if watch {
			kr.Watch(ctx, 20*time.Millisecond, nil)
		}
		m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		col, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text))
		wg.Add(1)
		go func() { // requests: read one note, rewrite another
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				id := int64(i%50 + 1)
				var ct field.Ciphertext
				if err := db.QueryRow(`SELECT body FROM notes WHERE id = ?`, id).Scan(&ct); err == nil {
					if _, err := col.Open(field.RowInt(id), ct); err != nil {
						failures.Add(1)
						t.Errorf("read of note %d: %v", id, err)
					}
					reads.Add(1)
				}
				w := int64((i*7)%50 + 1)
				if c, err := col.SealString(field.RowInt(w), fmt.Sprint("note ", w)); err == nil {
					db.Exec(`UPDATE notes SET body = ? WHERE id = ?`, c, w)
					writes.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		return m
	}
	start(true)
	start(true)
	code, out, e := run("keyring", "rotate", "--db", dbURL, "--wait", "30s")
	if code != 0 || !strings.Contains(out, "2 processes ready to hold key") || !strings.Contains(out, "notes.body:") {
		t.Fatalf("fleet rotation: %d\n%s\n%s", code, out, e)
	}
	time.Sleep(100 * time.Millisecond)
	if failures.Load() != 0 || reads.Load() == 0 || writes.Load() == 0 {
		t.Fatalf("%d of %d reads failed (%d writes)", failures.Load(), reads.Load(), writes.Load())
	}
	// A frozen process: registered, heartbeating, never reloading.
	frozen := start(false)
	code, _, e = run("keyring", "rotate", "--db", dbURL, "--wait", "500ms")
	if code != 1 || !strings.Contains(e, frozen.ID()) || !strings.Contains(e, "--skip") {
		t.Fatalf("rotation with a frozen process: %d %q", code, e)
	}
	code, out, e = run("keyring", "rotate", "--db", dbURL, "--wait", "30s", "--skip", frozen.ID())
	if code != 0 || !strings.Contains(out, "continuing with key") || !strings.Contains(e, "skipped "+frozen.ID()) {
		t.Fatalf("rotation skipping the frozen process: %d\n%s\n%s", code, out, e)
	}
	if code, out, _ := run("fleet", "--db", dbURL); code != 0 || strings.Count(out, "running") != 3 {
		t.Fatalf("ward fleet: %d %q", code, out)
	}
	cancel()
	wg.Wait()
}

// TestFleetSkipForm: 'ward fleet' shows a form waiting for a process whose
// registration a database writer deleted; 'ward fleet --skip-form ID'
// lets it open without that process, and 'ward fleet' then shows it open.
// 'ward fleet --expect 2' then holds the next form until two processes
// read it.
func TestFleetSkipForm(t *testing.T) {
	c := newCLI(t)
	dbURL, db := c.sqlite(t, "app.db")
	c.newKeyring(t)
	ctx := context.Background()
	load := func() *keyring.Keyring {
		kr := c.loadKeyring(t)
		return kr
	}
	if err := (&ledger.Ledger{DB: db, Dialect: field.SQLite}).Record(ctx, load()); err != nil {
		t.Fatal(err)
	}
	old, err := (&fleet.Registry{DB: db, Dialect: field.SQLite}).Join(ctx, load(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := fleetgate.New()
	g.Want(fleetgate.Sealed("notes", "body"))
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite, Gate: g}).Join(ctx, load(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m.Beat(ctx)
	}
	db.Exec(`DELETE FROM ward_fleet WHERE id = ?`, old.ID())
	m.Beat(ctx)
	code, out, e := c.run("fleet", "--db", dbURL)
	if code != 0 || !strings.Contains(out, "form sealed:notes.body: waiting since") || !strings.Contains(out, old.ID()) || g.Allows(fleetgate.Sealed("notes", "body")) {
		t.Fatalf("ward fleet with a vanished process: %d %q %q", code, out, e)
	}
	// A name that matches nothing is refused, and skips nothing.
	if code, _, e := c.run("fleet", "--db", dbURL, "--skip-form", "p-typo", "--skip-form", old.ID()); code != 2 || !strings.Contains(e, `named "p-typo": nothing was skipped`) {
		t.Fatalf("ward fleet --skip-form of no process: %d %q", code, e)
	}
	if code, out, _ := c.run("fleet", "--db", dbURL); code != 0 || strings.Contains(out, "skipped: "+old.ID()) {
		t.Fatalf("a refused --skip-form skipped: %q", out)
	}
	if code, out, e := c.run("fleet", "--db", dbURL, "--skip-form", old.ID()); code != 0 || !strings.Contains(out, "form sealed:notes.body: the named processes skipped") {
		t.Fatalf("ward fleet --skip-form: %d %q %q", code, out, e)
	}
	m.Beat(ctx)
	if code, out, _ := c.run("fleet", "--db", dbURL); !g.Allows(fleetgate.Sealed("notes", "body")) || !strings.Contains(out, "form sealed:notes.body: open since") || code != 0 {
		t.Fatalf("after the skip: %q", out)
	}
	// ward fleet --expect 2: the next form waits for a second process that
	// reads it, though the only registered one does.
	if code, out, e := c.run("fleet", "--db", dbURL, "--expect", "2"); code != 0 || !strings.Contains(out, "the fleet runs 2 processes") {
		t.Fatalf("ward fleet --expect: %d %q %q", code, out, e)
	}
	g.Want(fleetgate.Pepper)
	for range 3 {
		m.Beat(ctx)
	}
	if g.Allows(fleetgate.Pepper) {
		t.Fatal("a form opened with 1 of the 2 processes ward fleet --expect named")
	}
	c.run("fleet", "--db", dbURL, "--expect", "0")
	for range 2 {
		m.Beat(ctx)
	}
	if !g.Allows(fleetgate.Pepper) {
		t.Fatal("the form did not open once --expect was cleared")
	}
}

// TestEncryptColumnWaitsForForms: 'ward encrypt-column' refuses, writing
// nothing, while a registered process does not read ciphertexts in the
// column (it would show them as values), and runs once every process does.
func TestEncryptColumnWaitsForForms(t *testing.T) {
	c := newCLI(t)
	dbURL, db := c.sqlite(t, "app.db")
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 20; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, ?)`, i, fmt.Sprint("note ", i))
	}
	c.newKeyring(t)
	ctx := context.Background()
	join := func(declare ...fleetgate.Form) *fleet.Member {
		kr := c.loadKeyring(t)
		g := fleetgate.New()
		g.Declare(declare...)
		m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite, Gate: g}).Join(ctx, kr, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	reader := join(fleetgate.Password("bcrypt")) // knows forms, but not this column's
	code, _, e := c.run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet")
	var plain int
	db.QueryRow(`SELECT COUNT(*) FROM notes WHERE body NOT LIKE 'w3:%'`).Scan(&plain)
	if code == 0 || !strings.Contains(e, "not every process reads sealed:notes.body") || !strings.Contains(e, "nothing was written") || plain != 20 {
		t.Fatalf("encrypt-column with a process that reads the column as plaintext: %d %q, %d plaintext left", code, e, plain)
	}
	reader.Leave(ctx)
	join(fleetgate.Sealed("notes", "body"))
	if code, _, e := c.run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatalf("encrypt-column once every process reads ciphertexts: %d %q", code, e)
	}
	db.QueryRow(`SELECT COUNT(*) FROM notes WHERE body NOT LIKE 'w3:%'`).Scan(&plain)
	if plain != 0 {
		t.Fatalf("%d plaintext left", plain)
	}
}
