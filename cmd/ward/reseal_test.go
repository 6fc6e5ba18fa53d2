package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestRotateCommand fills a SQLite table through the field layer, rotates
// the keyring with the CLI, dry-runs, re-encrypts and checks the result.
func TestRotateCommand(t *testing.T) {
	cli := newCLI(t)
	dir, mk, env, run := cli.dir, cli.mk, cli.env, cli.run
	cli.newKeyring(t)
	kr, err := keyring.Load(context.Background(), env[KeyringEnv], mk)
	if err != nil {
		t.Fatal(err)
	}
	oldID := kr.Primary().ID
	dbPath := filepath.Join(dir, "chat.db")
	db, dialect, err := createDB("sqlite:" + dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	col, _ := field.NewColumn(kr, "messages", "body", field.WithEncoding(field.Text))
	db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 120; i++ {
		ct, _ := col.SealString(field.RowInt(int64(i)), fmt.Sprint("m", i))
		if _, err := db.Exec(`INSERT INTO messages VALUES (?, ?)`, i, ct); err != nil {
			t.Fatal(err)
		}
	}
	_ = dialect

	if code, _, e := run("keyring", "rotate", "--offline"); code != 0 {
		t.Fatal(e)
	}
	code, out, e := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--dry-run")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("key %v (decrypt-only): 120 values", oldID)) {
		t.Fatalf("dry run: %d %q %q", code, out, e)
	}
	// A deploy gate: --check fails while values are to re-seal.
	if code, out, e := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--check"); code != 1 || !strings.Contains(e, "not done") {
		t.Fatalf("check before: %d %q %q", code, out, e)
	}
	// A typo in a column name is named.
	if code, _, e := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "bdy", "--text"); code != 2 || !strings.Contains(e, "bdy") || !strings.Contains(e, "--column") {
		t.Fatalf("typo: %d %q", code, e)
	}
	// Interrupted (the context ends, as on Ctrl-C or SIGTERM): nothing is
	// half done, and the message says to run again.
	var ibuf, ierr bytes.Buffer
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ia := &app{stdin: strings.NewReader(""), stdout: &ibuf, stderr: &ierr, getenv: func(k string) string { return env[k] }}
	if code := ia.run(cancelled, []string{"reseal", "--db", "sqlite:" + dbPath, "--table", "messages", "--column", "body", "--text", "--quiet"}); code != 2 || !strings.Contains(ierr.String(), "interrupted") || !strings.Contains(ierr.String(), "run again") {
		t.Fatalf("interrupted: %d %q", code, ierr.String())
	}
	code, out, e = run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--batch", "50", "--quiet")
	if code != 0 || !strings.Contains(out, "120 written under") {
		t.Fatalf("rotate: %d %q %q", code, out, e)
	}
	kr2, _ := keyring.Load(context.Background(), env[KeyringEnv], mk)
	col2, _ := field.NewColumn(kr2, "messages", "body", field.WithEncoding(field.Text))
	rows, _ := db.Query(`SELECT id, body FROM messages`)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		rows.Scan(&id, &ct)
		keyID, _ := ct.KeyID()
		s, err := col2.OpenString(field.RowInt(id), ct)
		if err != nil || s != fmt.Sprint("m", id) || keyID != kr2.Primary().ID {
			t.Fatalf("row %d: %q %v key %v", id, s, err, keyID)
		}
	}
	if code, out, e := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--check"); code != 0 || !strings.Contains(out, "done:") {
		t.Fatalf("check after: %d %q %q", code, out, e)
	}
	// The old verb works for one release, and says what replaced it.
	if code, out, e := run("rotate", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--check"); code != 0 || !strings.Contains(out, "done:") ||
		!strings.Contains(e, "'ward rotate' is deprecated") || !strings.Contains(e, "use 'ward reseal'") {
		t.Fatalf("deprecated 'ward rotate': %d %q %q", code, out, e)
	}
	// With another keyring every value is suspect, and the census says
	// what is likely wrong.
	other := map[string]string{local.EnvVar: mk.Encode(), KeyringEnv: filepath.Join(dir, "other.json")}
	orun := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return other[k] }}
		return a.run(context.Background(), args), out.String(), errb.String()
	}
	orun("keyring", "new")
	if code, out, e := orun("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--dry-run"); code != 0 || !strings.Contains(out, "every value is suspect") || !strings.Contains(out, "keyring of this database") || !strings.Contains(e, "a different keyring") {
		t.Fatalf("another keyring: %d %q %q", code, out, e)
	}
	// Writing with it is refused by the database's ledger, before any row.
	if code, out, e := orun("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--quiet"); code != 1 || !strings.Contains(e, "refuses keyring") || strings.Contains(out, "written") {
		t.Fatalf("rotate with another keyring: %d %q %q", code, out, e)
	}
	// Now the old key can be disabled, and a second run has nothing to do.
	if code, _, e := run("keyring", "disable", oldID.String()); code != 0 {
		t.Fatal(e)
	}
	if code, out, _ := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages", "--column", "body", "--text", "--quiet"); code != 0 || !strings.Contains(out, ": 0 written under") {
		t.Fatalf("second run: %q", out)
	}
	if code, _, e := run("reseal", "--db", "oracle://x", "--table", "t", "--column", "c"); code != 2 || !strings.Contains(e, "unknown scheme") {
		t.Fatalf("bad URL: %d %q", code, e)
	}
	if code, _, e := run("reseal", "--db", "sqlite:"+dbPath, "--table", "messages; DROP", "--column", "body"); code != 2 || !strings.Contains(e, "invalid SQL identifier") {
		t.Fatalf("bad identifier: %d %q", code, e)
	}
	var _ *sql.DB = db
}

// TestEncryptColumnCommand encrypts a plaintext column with the CLI: the
// dry run counts plaintext, two shards with two workers each do the work,
// and a last dry run says it is done.
func TestEncryptColumnCommand(t *testing.T) {
	cli := newCLI(t)
	dir, run := cli.dir, cli.run
	cli.newKeyring(t)
	dbURL := "sqlite:" + filepath.Join(dir, "app.db")
	db, _, err := createDB(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 200; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, ?)`, i, fmt.Sprint("note ", i))
	}
	base := []string{"encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"}
	if code, out, e := run(append(base, "--dry-run")...); code != 0 || !strings.Contains(out, "200 rows, 0 NULL, 200 plaintext, 0 suspect") {
		t.Fatalf("dry run: %d %q %q", code, out, e)
	}
	for _, shard := range []string{"0/2", "1/2"} {
		if code, out, e := run(append(base, "--shard", shard, "--workers", "2", "--batch", "16")...); code != 0 || !strings.Contains(out, "of them plaintext") {
			t.Fatalf("shard %s: %d %q %q", shard, code, out, e)
		}
	}
	if code, out, e := run(append(base, "--dry-run")...); code != 0 || !strings.Contains(out, "0 plaintext") || !strings.Contains(out, "done:") {
		t.Fatalf("dry run after: %d %q %q", code, out, e)
	}
	if code, _, e := run(append(base, "--shard", "2/2")...); code != 2 || !strings.Contains(e, "--shard") {
		t.Fatalf("bad shard: %d %q", code, e)
	}
}

// TestMasterKeyPrompt takes the master key from the prompt when neither
// the environment nor a file gives one.
func TestMasterKeyPrompt(t *testing.T) {
	mk := local.Generate()
	path := filepath.Join(t.TempDir(), "kr.json")
	prompted := 0
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" },
		prompt: func(string) ([]byte, error) { prompted++; return []byte(mk.Encode()), nil }}
	if code := a.run(context.Background(), []string{"--keyring", path, "keyring", "new"}); code != 0 || prompted != 1 {
		t.Fatalf("code %d, prompted %d: %s", code, prompted, errb.String())
	}
	if _, err := keyring.Load(context.Background(), path, mk); err != nil {
		t.Fatal(err)
	}
	a.prompt = func(string) ([]byte, error) { return []byte("not a key"), nil }
	if code := a.run(context.Background(), []string{"--keyring", path, "keyring", "list"}); code != 2 || strings.Contains(errb.String(), "not a key") {
		t.Fatalf("bad prompt input: %d %s", code, errb.String())
	}
}

// TestKeyCommandsCheckTheLedger is the seams issue's restored keyring: a
// rotation recorded in the database's ledger (--db), then the keyring file
// from before it put back. Every key command and job given --db refuses
// that file (main never read the ledger from the CLI: 123 of 123 values
// became unreadable); without --db a key command warns.
func TestKeyCommandsCheckTheLedger(t *testing.T) {
	cli := newCLI(t)
	dir, krPath, run := cli.dir, cli.krPath, cli.run
	dbURL := "sqlite:" + filepath.Join(dir, "app.db")
	db, _, err := createDB(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	db.Exec(`INSERT INTO notes VALUES (1, 'hello')`)
	cli.newKeyring(t)
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatal(e)
	}
	before, _ := os.ReadFile(krPath)
	if code, _, e := run("keyring", "rotate", "--db", dbURL); code != 0 || strings.Contains(e, "warning") {
		t.Fatalf("rotate --db: %d %q", code, e)
	}
	if code, _, e := run("reseal", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := run("keyring", "add"); code != 0 || !strings.Contains(e, "no database ledger was checked") {
		t.Fatalf("add without --db: %d %q", code, e)
	}
	if code, out, e := run("ledger", "--db", dbURL); code != 0 || !strings.Contains(out, "accepts") || strings.Count(out, "\n  key ") != 2 || !strings.Contains(out, "anchored in the keyring file") {
		t.Fatalf("ledger: %d %q %q", code, out, e)
	}
	// The older file, put back: refused by every command given the database.
	latest, _ := os.ReadFile(krPath)
	if err := os.WriteFile(krPath, before, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keyring", "add", "--db", dbURL},
		{"keyring", "rotate", "--db", dbURL},
		{"rotate", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"},
		{"encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"},
	} {
		if code, _, e := run(args...); code != 1 || !strings.Contains(e, "refuses keyring") {
			t.Errorf("%v with the restored keyring: %d %q", args, code, e)
		}
	}
	if code, out, _ := run("ledger", "--db", dbURL, "--json"); code != 1 || !strings.Contains(out, `"check": "refuses`) {
		t.Errorf("ledger with the restored keyring: %d %q", code, out)
	}
	// The latest file back, and the ledger deleted by a database writer:
	// the keyring file anchors the database, so this is not a first use.
	if err := os.WriteFile(krPath, latest, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM ward_ledger`); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keyring", "add", "--db", dbURL},
		{"rotate", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"},
		{"ledger", "adopt", "--db", dbURL},
	} {
		if code, _, e := run(args...); code != 1 || !strings.Contains(e, "no ledger") {
			t.Errorf("%v with the ledger deleted: %d %q", args, code, e)
		}
	}
}

// TestLedgerAdoptCommand: a database with the unauthenticated ledger of an
// earlier release is refused until 'ward ledger adopt' takes it over,
// once.
func TestLedgerAdoptCommand(t *testing.T) {
	cli := newCLI(t)
	dir, mk, krPath, run := cli.dir, cli.mk, cli.krPath, cli.run
	cli.newKeyring(t)
	kr, err := keyring.Load(context.Background(), krPath, mk)
	if err != nil {
		t.Fatal(err)
	}
	dbURL := "sqlite:" + filepath.Join(dir, "app.db")
	db, _, err := createDB(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	db.Exec(`INSERT INTO notes VALUES (1, 'hello')`)
	db.Exec(`CREATE TABLE ward_keyring_ledger (keyring_id TEXT NOT NULL, key_id TEXT NOT NULL, generation BIGINT NOT NULL, PRIMARY KEY (keyring_id, key_id))`)
	if _, err := db.Exec(`INSERT INTO ward_keyring_ledger VALUES (?, ?, 1)`, kr.ID(), kr.Primary().ID.String()); err != nil {
		t.Fatal(err)
	}
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 1 || !strings.Contains(e, "ward ledger adopt") {
		t.Fatalf("encrypt-column before adoption: %d %q", code, e)
	}
	if code, out, e := run("ledger", "adopt", "--db", dbURL); code != 0 || !strings.Contains(out, "1 entries of the unauthenticated ledger trusted") {
		t.Fatalf("adopt: %d %q %q", code, out, e)
	}
	if code, _, e := run("ledger", "adopt", "--db", dbURL); code != 1 || !strings.Contains(e, "already has an authenticated ledger") {
		t.Fatalf("second adopt: %d %q", code, e)
	}
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "notes", "--column", "body", "--text", "--quiet"); code != 0 {
		t.Fatalf("encrypt-column after adoption: %d %q", code, e)
	}
	// A second database joins only when the operator says it is new.
	db2URL := "sqlite:" + filepath.Join(dir, "other.db")
	if db2, _, err := createDB(db2URL); err == nil { // the application's new database
		db2.Close()
	}
	if code, _, e := run("ledger", "adopt", "--db", db2URL); code != 1 || !strings.Contains(e, "--another-database") {
		t.Fatalf("adopt a second database without --another-database: %d %q", code, e)
	}
	if code, _, e := run("ledger", "adopt", "--another-database", "--db", db2URL); code != 0 {
		t.Fatalf("adopt --another-database: %d %q", code, e)
	}
}

// TestEncryptColumnIndex: encrypt-column --index writes the blind index of
// each value in the same UPDATE and fills in the index of values the
// application encrypted without one; the index matches the one the
// application computes (case-folded), so search works at once.
func TestEncryptColumnIndex(t *testing.T) {
	cli := newCLI(t)
	dir, mk, krPath, run := cli.dir, cli.mk, cli.krPath, cli.run
	cli.newKeyring(t)
	dbURL := "sqlite:" + filepath.Join(dir, "app.db")
	db, _, err := createDB(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT, email_index BLOB UNIQUE)`)
	for i := range 20 {
		db.Exec(`INSERT INTO users (email) VALUES (?)`, fmt.Sprintf("User%d@Example.com", i))
	}
	// --index needs its normalisation named: a wrong one would find nothing.
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "users", "--column", "email", "--text", "--index", "email_index", "--dry-run"); code != 2 || !strings.Contains(e, "--index needs --index-normalize") {
		t.Fatalf("--index without --index-normalize: %d %q", code, e)
	}
	args := []string{"encrypt-column", "--db", dbURL, "--table", "users", "--column", "email", "--text", "--index", "email_index", "--index-normalize", "fold", "--quiet"}
	if code, out, e := run(append(args, "--dry-run")...); code != 0 || !strings.Contains(out, "20 plaintext") {
		t.Fatalf("dry run: %d %q %q", code, out, e)
	}
	code, out, e := run(args...)
	if code != 0 || !strings.Contains(out, "blind index email_index written") {
		t.Fatalf("encrypt-column --index: %d %q %q", code, out, e)
	}
	kr, err := keyring.Load(context.Background(), krPath, mk)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := field.NewBlindIndex(kr, "users", "email", field.WithNormalizer(field.NormalizeFold))
	var id int64
	if err := db.QueryRow(`SELECT id FROM users WHERE email_index = ?`, idx.Compute("user7@example.com")).Scan(&id); err != nil || id != 8 {
		t.Fatalf("search through the backfilled index: %d %v", id, err)
	}
	if code, out, _ := run(append(args[:len(args)-1], "--check")...); code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("check after: %d %q", code, out)
	}
	if code, _, e := run("encrypt-column", "--db", dbURL, "--table", "users", "--column", "email", "--text", "--index", "email_index", "--index-normalize", "none", "--check"); code != 0 || !strings.Contains(e, "--index-normalize none is deprecated") {
		t.Fatalf("--index-normalize none: %d %q", code, e)
	}
	if code, _, e := run(append(args, "--index-normalize", "upper")...); code != 2 || !strings.Contains(e, "nfc or fold") {
		t.Fatalf("bad normaliser: %d %q", code, e)
	}
}
