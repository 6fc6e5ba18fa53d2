package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestCryptBind: 'ward encrypt --bind' binds the value to the bound
// column's value, as field.Bind does: 'ward decrypt' opens it with the same
// --bind and refuses it with another or without.
func TestCryptBind(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	code, out, e := c.runStdin("hello", "encrypt", "--table", "messages", "--column", "body", "--row", "7", "--bind", "conversation_id=3")
	if code != 0 {
		t.Fatalf("encrypt --bind: %d %q", code, e)
	}
	ct := strings.TrimSpace(out)
	if code, out, e := c.runStdin(ct, "decrypt", "--table", "messages", "--column", "body", "--row", "7", "--bind", "conversation_id=3"); code != 0 || out != "hello" {
		t.Fatalf("decrypt with the same --bind: %d %q %q", code, out, e)
	}
	if code, out, _ := c.runStdin(ct, "decrypt", "--table", "messages", "--column", "body", "--row", "7", "--bind", "conversation_id=4"); code == 0 {
		t.Fatalf("decrypt --bind conversation_id=4 opened a value bound to conversation 3: %q", out)
	}
	if code, out, _ := c.runStdin(ct, "decrypt", "--table", "messages", "--column", "body", "--row", "7"); code == 0 {
		t.Fatalf("decrypt without --bind opened a bound value: %q", out)
	}
}

// runStdin runs ward with stdin.
func (c *cliEnv) runStdin(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return c.env[k] }}
	return a.run(context.Background(), args), out.String(), errb.String()
}

// jobTable makes notes(note_id, conv, body) with n plaintext bodies.
func jobTable(t *testing.T, c *cliEnv, n int) string {
	t.Helper()
	url, db := c.sqlite(t, "jobs.db")
	if _, err := db.Exec(`CREATE TABLE notes (note_id INTEGER PRIMARY KEY, conv TEXT NOT NULL, body TEXT, body_idx BLOB)`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		db.Exec(`INSERT INTO notes (note_id, conv, body) VALUES (?, ?, ?)`, i, fmt.Sprint("c", i%3), fmt.Sprint("Note ", i))
	}
	return url
}

// TestJobFlags: the flags of 'ward encrypt-column' and 'ward reseal' (one
// set, jobFlags) each change what the job does. Each call names its
// command and flags on one line, as TestFlagTable reads them.
func TestJobFlags(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url := jobTable(t, c, 40)
	_, db := c.sqlite(t, "jobs.db")
	timed := func(f func() (int, string, string)) (int, string, string, time.Duration) {
		start := time.Now()
		code, out, e := f()
		return code, out, e, time.Since(start)
	}
	written := func(out string) int {
		var n int
		fmt.Sscanf(out, "notes.body: %d written", &n)
		return n
	}
	// --key: the row key is note_id; the default (id) does not exist.
	if code, _, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--quiet"); code == 0 || !strings.Contains(e, "id") {
		t.Fatalf("encrypt-column without --key: %d %q", code, e)
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--dry-run"); code != 0 || !strings.Contains(out, "40 plaintext") {
		t.Fatalf("encrypt-column --dry-run: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--check"); code != 1 || !strings.Contains(e, "not done") {
		t.Fatalf("encrypt-column --check before: %d %q %q", code, out, e)
	}
	// --shard, --workers, --rate, --quiet: shard 0/2 moves some rows, at
	// most 100 a second, with two workers, printing no progress.
	code, out, e, d := timed(func() (int, string, string) {
		return c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--shard", "0/2", "--workers", "2", "--batch", "5", "--rate", "100", "--quiet")
	})
	n := written(out)
	if code != 0 || n == 0 || n == 40 || !strings.Contains(out, "2 workers") || strings.Contains(e, "notes.body: ") || d < time.Duration(n-5)*10*time.Millisecond {
		t.Fatalf("encrypt-column --shard 0/2 --workers 2 --rate 100: %d %q %q in %v", code, out, e, d)
	}
	// --batch, --pause, --index, --index-normalize nfc: the rest in
	// batches of 5 with 100 ms between them, progress on stderr, and the
	// exact index filled in for every row.
	code, out, e, d = timed(func() (int, string, string) {
		return c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--batch", "5", "--pause", "100ms", "--index", "body_idx", "--index-normalize", "nfc")
	})
	if code != 0 || !strings.Contains(out, fmt.Sprintf("(%d of them plaintext)", 40-n)) || !strings.Contains(out, fmt.Sprintf("%d rows only needed their index", n)) || !strings.Contains(e, "encrypting notes.body: ") || d < time.Duration((40-n)/5-1)*100*time.Millisecond {
		t.Fatalf("encrypt-column --batch 5 --pause 100ms: %d %q %q in %v", code, out, e, d)
	}
	if code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--check"); code != 0 || !strings.Contains(out, "done:") {
		t.Fatalf("encrypt-column --check after: %d %q %q", code, out, e)
	}
	kr, err := keyring.Load(context.Background(), c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(idx *field.BlindIndex, probe string) bool {
		var id int
		return db.QueryRow(`SELECT note_id FROM notes WHERE body_idx = ?`, idx.Compute(probe)).Scan(&id) == nil
	}
	exact, _ := field.NewBlindIndex(kr, "notes", "body")
	folded, _ := field.NewBlindIndex(kr, "notes", "body", field.WithNormalizer(field.NormalizeFold))
	if !lookup(exact, "Note 4") || lookup(exact, "note 4") {
		t.Fatal("--index-normalize nfc did not write the exact index")
	}
	bound, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text), field.Bind("conv"))
	var ct field.Ciphertext
	db.QueryRow(`SELECT body FROM notes WHERE note_id = 4`).Scan(&ct)
	if got, err := bound.OpenString(field.RowInt(4).With("c1"), ct); err != nil || got != "Note 4" {
		t.Fatalf("a value encrypted with --bind conv: %q %v", got, err)
	}

	// reseal: without --bind every value (bound to conv) is suspect.
	if code, out, _ := c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--dry-run"); code != 0 || !strings.Contains(out, "40 suspect") {
		t.Fatalf("reseal --dry-run without --bind: %d %q", code, out)
	}
	if code, out, _ := c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--dry-run"); code != 0 || !strings.Contains(out, "0 suspect") {
		t.Fatalf("reseal --dry-run --bind conv: %d %q", code, out)
	}
	if code, _, e := c.run("keyring", "rotate", "--offline"); code != 0 {
		t.Fatal(e)
	}
	if code, out, e := c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--check"); code != 1 || !strings.Contains(e, "not done") {
		t.Fatalf("reseal --check after a rotation: %d %q %q", code, out, e)
	}
	code, out, e, d = timed(func() (int, string, string) {
		return c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--shard", "0/2", "--workers", "2", "--batch", "5", "--rate", "100", "--quiet")
	})
	n = written(out)
	if code != 0 || n == 0 || n == 40 || !strings.Contains(out, "2 workers") || strings.Contains(e, "notes.body: ") || d < time.Duration(n-5)*10*time.Millisecond {
		t.Fatalf("reseal --shard 0/2 --workers 2 --rate 100: %d %q %q in %v", code, out, e, d)
	}
	db.Exec(`UPDATE notes SET body_idx = NULL`) // the job fills in missing indexes
	code, out, e, d = timed(func() (int, string, string) {
		return c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--key", "note_id", "--bind", "conv", "--batch", "5", "--pause", "100ms", "--index", "body_idx", "--index-normalize", "fold")
	})
	if code != 0 || written(out) != 40 || !strings.Contains(out, fmt.Sprintf("%d rows only needed their index", n)) || !strings.Contains(out, "1 workers") || !strings.Contains(e, "re-encrypting notes.body: ") || d < time.Duration((40-n)/5-1)*100*time.Millisecond {
		t.Fatalf("reseal --batch 5 --pause 100ms: %d %q %q in %v", code, out, e, d)
	}
	if !lookup(folded, "note 4") || !lookup(folded, "NOTE 4") {
		t.Fatal("--index-normalize fold did not write the case-folded index")
	}
}

// TestKeyringFlags: add --alg and --promote, new --force, rewrap
// --to-master-key-file.
func TestKeyringFlags(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	if code, out, e := c.run("keyring", "add", "--alg", "XChaCha20-Poly1305"); code != 0 {
		t.Fatalf("add --alg: %d %q %q", code, out, e)
	}
	keys := func() keyListJSON {
		_, out, _ := c.run("keyring", "list", "--json")
		var l keyListJSON
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := keys()
	newest := l.Keys[len(l.Keys)-1]
	if newest.Algorithm != "XChaCha20-Poly1305" || newest.State == "primary" {
		t.Fatalf("add --alg XChaCha20-Poly1305 without --promote: %+v", l)
	}
	c.run("keyring", "add", "--promote")
	if l := keys(); l.Keys[len(l.Keys)-1].State != "primary" {
		t.Fatalf("add --promote: %+v", l)
	}
	// new refuses to replace a keyring; --force replaces it.
	if code, _, e := c.run("keyring", "new"); code == 0 || !strings.Contains(e, "--force") {
		t.Fatalf("new over a keyring: %d %q", code, e)
	}
	if code, _, e := c.run("keyring", "new", "--force"); code != 0 || len(keys().Keys) != 1 {
		t.Fatalf("new --force: %d %q", code, e)
	}
	// rewrap --to-master-key-file: the keyring opens under the new key.
	mk2 := local.Generate()
	file := filepath.Join(c.dir, "mk2")
	os.WriteFile(file, []byte(mk2.Encode()), 0o600)
	if code, _, e := c.run("keyring", "rewrap", "--to-master-key-file", file); code != 0 {
		t.Fatalf("rewrap: %d %q", code, e)
	}
	if _, err := keyring.Load(context.Background(), c.krPath, mk2); err != nil {
		t.Fatalf("after rewrap --to-master-key-file: %v", err)
	}
}

// TestRotateStaleAfter: a registered process that stopped heartbeating
// blocks a fleet rotation until its heartbeat is older than --stale-after.
func TestRotateStaleAfter(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	kr := c.loadKeyring(t)
	if err := (&ledger.Ledger{DB: db, Dialect: field.SQLite}).Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	// A process that joined and froze: it heartbeats once an hour.
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite}).Join(ctx, kr, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	if code, _, e := c.run("keyring", "rotate", "--db", url, "--wait", "1500ms"); code != 1 || !strings.Contains(e, m.ID()) {
		t.Fatalf("rotate with the default --stale-after: %d %q", code, e)
	}
	if code, out, e := c.run("keyring", "rotate", "--db", url, "--stale-after", "100ms", "--wait", "30s"); code != 0 || !strings.Contains(out, "promoted") || !strings.Contains(e, "no longer blocks") {
		t.Fatalf("rotate --stale-after 100ms: %d %q %q", code, out, e)
	}
}

// TestJSONFlags: 'ward fleet --json' and 'ward password inspect --json'
// print JSON where the default prints text.
func TestJSONFlags(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	kr, _ := keyring.Load(ctx, c.krPath, c.mk)
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite}).Join(ctx, kr, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	var fl []struct {
		DB        string          `json:"db"`
		Processes []fleet.Process `json:"processes"`
	}
	_, text, _ := c.run("fleet", "--db", url)
	code, out, e := c.run("fleet", "--db", url, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &fl) != nil || len(fl) != 1 || len(fl[0].Processes) != 1 || fl[0].Processes[0].ID != m.ID() || json.Valid([]byte(text)) {
		t.Fatalf("fleet --json: %d %q %q (text %q)", code, out, e, text)
	}
	hash := filepath.Join(c.dir, "h")
	os.WriteFile(hash, []byte("$argon2id$v=19$m=19456,t=2,p=1$SM8vFfXBLcapThGUVIgKgg$XrLJj4SzW0tfznujuNEwTBwTrQXhqls9bqs+XO8uUiM"), 0o600)
	var info map[string]any
	_, text, _ = c.run("password", "inspect", "--hash-file", hash)
	if code, out, e := c.run("password", "inspect", "--hash-file", hash, "--json"); code != 0 || json.Unmarshal([]byte(out), &info) != nil || info["scheme"] != "argon2id" || json.Valid([]byte(text)) {
		t.Fatalf("password inspect --json: %d %q %q", code, out, e)
	}
}

// TestSubjectResealFlags: 'ward subject reseal --batch' and '--workers'
// reach the reseal, which reports them, and every key moves; the old
// spellings ('subject rewrap', 'keyring rotate --no-reencrypt') still work
// for one release, with a warning.
func TestSubjectResealFlags(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url := withSubjects(t, c, 10)
	c.run("keyring", "rotate", "--db", url, "--no-reseal")
	if code, out, e := c.run("subject", "reseal", "--db", url); code != 0 || !strings.Contains(out, "in batches of 500 by 2 workers") {
		t.Fatalf("reseal with the defaults: %d %q %q", code, out, e)
	}
	c.run("keyring", "rotate", "--db", url, "--no-reseal")
	if code, out, e := c.run("subject", "reseal", "--db", url, "--batch", "3", "--workers", "3"); code != 0 || !strings.Contains(out, "users: 10 resealed") || !strings.Contains(out, "in batches of 3 by 3 workers") {
		t.Fatalf("reseal --batch 3 --workers 3: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("keyring", "rotate", "--db", url, "--no-reencrypt"); code != 0 || !strings.Contains(out, "not resealing") ||
		!strings.Contains(e, "--no-reencrypt is deprecated: use --no-reseal") {
		t.Fatalf("rotate --no-reencrypt: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("subject", "rewrap", "--db", url); code != 0 || !strings.Contains(out, "users: 10 resealed") ||
		!strings.Contains(e, "'ward subject rewrap' is deprecated") || !strings.Contains(e, "use 'ward subject reseal'") {
		t.Fatalf("deprecated 'subject rewrap': %d %q %q", code, out, e)
	}
}

// TestJobJSON: 'ward encrypt-column --json' and 'ward reseal --json' print
// the census (with --dry-run or --check) and what the job did as JSON, in
// docs/CLI.md's schema; the default prints text.
func TestJobJSON(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 3; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, 'plain')`, i)
	}
	var census censusDoc
	code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--dry-run", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &census) != nil || census.Column != "notes.body" || census.Rows != 3 || census.Plaintext != 3 || census.Done {
		t.Fatalf("encrypt-column --dry-run --json: %d %q %q", code, out, e)
	}
	var job jobDoc
	code, out, e = c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &job) != nil || job.Written != 3 || job.Plaintext != 3 || job.Workers != 1 || job.Key == "" {
		t.Fatalf("encrypt-column --json: %d %q %q", code, out, e)
	}
	census = censusDoc{}
	code, out, e = c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--check", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &census) != nil || !census.Done || len(census.PerKey) != 1 || census.PerKey[0].Values != 3 || census.PerVersion["v4"] != 3 {
		t.Fatalf("reseal --check --json: %d %q %q", code, out, e)
	}
	if code, out, _ := c.run("reseal", "--db", url, "--table", "notes", "--column", "body", "--text", "--check"); code != 0 || json.Valid([]byte(out)) {
		t.Fatalf("reseal --check without --json: %d %q", code, out)
	}
}
