package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The operator's first mistakes (rows of the operator-experience table in
// docs/CLI.md, "When something goes wrong"): each gets its own diagnosis
// and exit code, nothing is created by accident, and no password is
// printed.

// inEmptyDir runs the test in a fresh working folder and reports, at its
// end, anything a command left there.
func inEmptyDir(t *testing.T) func() []string {
	dir := t.TempDir()
	t.Chdir(dir)
	return func() []string {
		var names []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
}

// TestDBForms: a key=value DSN reaches PostgreSQL (nothing is created in
// the working folder, whose name would hold the password); a raw @ in a
// URL's password is refused before any driver sees it; every --db form
// against a closed port says it cannot connect, without a ledger or column
// hint, and prints no part of the password.
func TestDBForms(t *testing.T) {
	left := inEmptyDir(t)
	c := newCLI(t)
	c.newKeyring(t)
	for _, db := range []string{
		"host=127.0.0.1 port=1 user=ward password=hunter2pw dbname=x connect_timeout=2",
		"postgres://ward:hunter2pw@127.0.0.1:1/x?connect_timeout=2",
		"postgresql://ward:hunter2pw@127.0.0.1:1/x?connect_timeout=2&sslmode=disable",
	} {
		code, out, e := c.run("reseal", "--db", db, "--table", "notes", "--column", "body", "--dry-run")
		if code != 1 || !strings.Contains(e, "cannot connect to") || strings.Contains(e, "ledger") || strings.Contains(e, "--column") {
			t.Errorf("%s: %d %q %q", db, code, out, e)
		}
		if strings.Contains(out+e, "hunter2") {
			t.Errorf("%s: the password was printed: %q %q", db, out, e)
		}
	}
	code, out, e := c.run("ledger", "--db", "postgres://ward:s3cr3t@ss@127.0.0.1:1/db")
	if code != 2 || !strings.Contains(e, "percent-encoded") || strings.Contains(out+e, "s3cr3t") || strings.Contains(out+e, "ss@") {
		t.Errorf("a raw @ in the password: %d %q %q", code, out, e)
	}
	if names := left(); len(names) != 0 {
		t.Errorf("left in the working folder: %q", names)
	}
}

// TestNothingCreated: a mistyped SQLite path or scheme is refused with
// "no such database file" or the scheme named, and creates nothing; a
// look at a database ('ward ledger', a dry run) writes nothing to it.
func TestNothingCreated(t *testing.T) {
	left := inEmptyDir(t)
	c := newCLI(t)
	c.newKeyring(t)
	if code, _, e := c.run("reseal", "--db", "sqlite:smal.db", "--table", "notes", "--column", "body"); code != 2 || !strings.Contains(e, "no such database file: smal.db") {
		t.Errorf("a mistyped path: %d %q", code, e)
	}
	if code, _, e := c.run("ledger", "--db", "sqllite:small.db"); code != 2 || !strings.Contains(e, "unknown scheme") {
		t.Errorf("a mistyped scheme: %d %q", code, e)
	}
	if code, _, e := c.run("ledger", "--db", "small.db"); code != 2 || !strings.Contains(e, "sqlite:small.db") {
		t.Errorf("a bare path: %d %q", code, e)
	}
	if names := left(); len(names) != 0 {
		t.Fatalf("a refused --db left %q", names)
	}
	url, db := c.sqlite(t, "app.db")
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	db.Exec(`INSERT INTO notes VALUES (1, 'hello')`)
	tables := func() string {
		var names []string
		rows, _ := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		rows.Close()
		return strings.Join(names, ",")
	}
	if code, out, e := c.run("ledger", "--db", url); code != 0 || !strings.Contains(out, "no ledger yet") || tables() != "notes" {
		t.Errorf("ward ledger: %d %q %q, tables %s", code, out, e, tables())
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--dry-run"); code != 0 || !strings.Contains(out, "1 plaintext") || tables() != "notes" {
		t.Errorf("encrypt-column --dry-run: %d %q %q, tables %s", code, out, e, tables())
	}
	if code, out, e := c.run("fleet", "--db", url); code != 0 || tables() != "notes" {
		t.Errorf("ward fleet: %d %q %q, tables %s", code, out, e, tables())
	}
	if code, out, e := c.run("subject", "audit", "--db", url); code != 0 || !strings.Contains(out, "no subject keys") || tables() != "notes" {
		t.Errorf("ward subject audit: %d %q %q, tables %s", code, out, e, tables())
	}
}

// TestWrongTableAndPlaintext: a mistyped --table is "no table", not a
// missing key column; 'ward reseal' on a column that was never encrypted
// says so in its dry run, its run and its check, and names encrypt-column
// (the check's hint no longer loops back to reseal).
func TestWrongTableAndPlaintext(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 5; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, 'plain')`, i)
	}
	if code, _, e := c.run("reseal", "--db", url, "--table", "note", "--column", "body", "--text"); code != 2 || !strings.Contains(e, "no table note") || strings.Contains(e, `"id"`) {
		t.Errorf("a mistyped --table: %d %q", code, e)
	}
	for _, extra := range [][]string{{"--dry-run"}, {"--check"}, {"--quiet"}} {
		code, out, e := c.run(append([]string{"reseal", "--db", url, "--table", "notes", "--column", "body", "--text"}, extra...)...)
		if code != 1 || !strings.Contains(e, "holds plaintext (every value is not encrypted)") || !strings.Contains(e, "hint: encrypt the column with 'ward encrypt-column'") || strings.Contains(e, "without --check") {
			t.Errorf("reseal %v of a plaintext column: %d %q %q", extra, code, out, e)
		}
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 || !strings.Contains(out, "5 written") {
		t.Errorf("encrypt-column after the advice: %d %q %q", code, out, e)
	}
}

// TestSecondDatabase: a database new to a keyring that serves another is
// introduced as new, with the command that adopts it, not as an attack.
func TestSecondDatabase(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	first, db1 := c.sqlite(t, "first.db")
	db1.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	if code, _, e := c.run("encrypt-column", "--db", first, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatal(e)
	}
	second, db2 := c.sqlite(t, "second.db")
	db2.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	code, _, e := c.run("encrypt-column", "--db", second, "--table", "notes", "--column", "body", "--text", "--quiet")
	if code != 1 || !strings.Contains(e, "second.db is new to keyring") || !strings.Contains(e, "hint: adopt it once: 'ward ledger adopt --another-database") {
		t.Fatalf("a second database: %d %q", code, e)
	}
	if i, j := strings.Index(e, "new to keyring"), strings.Index(e, "dropped"); i < 0 || j < i {
		t.Fatalf("the message does not say first that the database is new: %q", e)
	}
	if code, _, e := c.run("ledger", "adopt", "--another-database", "--db", second); code != 0 {
		t.Fatalf("adopt: %d %q", code, e)
	}
	if code, _, e := c.run("encrypt-column", "--db", second, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatalf("after adopting: %d %q", code, e)
	}
}

// TestKMSWithoutCredentials: AWS KMS with no credentials anywhere is a
// misconfiguration with its hint, not "service unavailable", and leaves no
// keyring file. The instance-metadata service is disabled: nothing leaves
// the machine.
func TestKMSWithoutCredentials(t *testing.T) {
	left := inEmptyDir(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	c := newCLI(t)
	code, out, e := c.run("--kms", "awskms://alias/ward?region=eu-west-1", "--keyring", "kr.json", "keyring", "new")
	if code != 2 || !strings.Contains(e, "misconfigured") || strings.Contains(e, "unavailable") || !strings.Contains(e, "hint: the key service is misconfigured") {
		t.Fatalf("keyring new under AWS KMS without credentials: %d %q %q", code, out, e)
	}
	if names := left(); len(names) != 0 {
		t.Fatalf("left %q", names)
	}
}

// TestConcurrentForgets: eight 'ward subject forget' at once on one
// keyring file and database all succeed (each process's keyring file may
// be a generation behind another's write: it reloads the file, which is
// never older, before calling that a rollback); the audit then finds the
// namespace by its tombstones and its ledger count, though no key is left.
func TestConcurrentForgets(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url := withSubjects(t, c, 8)
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for i := range 8 {
		wg.Go(func() {
			if code, out, e := c.run("subject", "forget", "--db", url, "--namespace", "users", fmt.Sprintf("user-%d", i)); code != 0 {
				errs[i] = fmt.Sprintf("forget user-%d: %d %q %q", i, code, out, e)
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if code, out, e := c.run("subject", "audit", "--db", url); code != 0 || !strings.Contains(out, "users: 8 tombstones (ledger counts 8)") {
		t.Fatalf("audit after 8 concurrent forgets: %d %q %q", code, out, e)
	}
	// A database writer deletes every tombstone of the namespace (its keys
	// are gone already): the ledger's count still names it, and the audit
	// fails instead of finding "no subject keys".
	_, db := c.sqlite(t, "app.db")
	db.Exec(`DELETE FROM ward_subject_tombstones`)
	if code, out, e := c.run("subject", "audit", "--db", url); code != 1 || !strings.Contains(out, "users: 0 tombstones (ledger counts 8)") || !strings.Contains(e, "deleted or planted tombstones") {
		t.Fatalf("audit after the tombstones were deleted: %d %q %q", code, out, e)
	}
}
