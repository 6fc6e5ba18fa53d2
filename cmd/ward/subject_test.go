package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// TestSubjectCommands: an application with a column sealed per user and
// peppered password hashes; the keyring rotates across it, 'ward keyring
// retire' refuses while a hash is peppered with the old key and succeeds
// once it moved, and 'ward subject forget' erases one user while the other
// still opens, the audit agreeing.
func TestSubjectCommands(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	if _, err := db.Exec(`CREATE TABLE msgs (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, body BLOB);
		CREATE TABLE users (id TEXT PRIMARY KEY, pw TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	app := func() (*keyring.Keyring, *ledger.Ledger, *field.Column, *password.Hasher) {
		kr := c.loadKeyring(t)
		l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
		s, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: l, Namespace: "users", TTL: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		col, err := field.NewColumn(kr, "msgs", "body", field.Bind("user_id"), field.PerSubject(s, "user_id"))
		if err != nil {
			t.Fatal(err)
		}
		h, err := password.NewHasher(password.Policy{Preferred: password.Params{Scheme: password.Argon2id, Memory: 64, Time: 1, Parallelism: 1}, AllowWeak: true, Pepper: kr}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return kr, l, col, h
	}
	kr, l, col, h := app()
	if err := l.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordColumns(ctx, kr, ledger.ColumnOf(col, "id"),
		ledger.Column{Table: "users", Column: "pw", Key: "id", Kind: ledger.KindPasswordHash}); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"alice", "bob"} {
		ct, err := col.SealString(field.RowInt(int64(i+1)).With(u), u+"'s message")
		if err != nil {
			t.Fatal(err)
		}
		hash, err := h.Hash(ctx, []byte(u+" pw"))
		if err != nil {
			t.Fatal(err)
		}
		db.Exec(`INSERT INTO msgs VALUES (?, ?, ?)`, i+1, u, ct)
		db.Exec(`INSERT INTO users VALUES (?, ?)`, u, hash)
	}
	old := kr.Primary().ID

	if code, out, e := c.run("keyring", "rotate", "--db", url); code != 0 || !strings.Contains(out, "subject keys of users: 2 resealed") {
		t.Fatalf("rotate: %d %q %q", code, out, e)
	}
	// Hashes still peppered with the old key do not hold it back: its
	// pepper key is kept, its material goes.
	code, out, e := c.run("keyring", "retire", old.String(), "--db", url)
	if code != 0 || !strings.Contains(out, "2 password hashes in users.pw are peppered with it: they keep verifying") || !strings.Contains(out, "retired") {
		t.Fatalf("retire with peppered hashes: %d %q %q", code, out, e)
	}
	// The users log in after the retire: their old hashes verify, and move
	// to the new pepper.
	_, _, _, h = app()
	for _, u := range []string{"alice", "bob"} {
		var hash string
		db.QueryRow(`SELECT pw FROM users WHERE id = ?`, u).Scan(&hash)
		up, _, err := h.VerifyAndUpgrade(ctx, []byte(u+" pw"), hash)
		if err != nil || up == "" {
			t.Fatalf("log-in after the retire: %q %v", up, err)
		}
		db.Exec(`UPDATE users SET pw = ? WHERE id = ?`, up, u)
	}
	if code, out, e := c.run("keyring", "list"); code != 0 || strings.Contains(out, old.String()) {
		t.Fatalf("list after retire: %q %q", out, e)
	}
	if code, out, e := c.run("ledger", "--db", url); code != 0 || !strings.Contains(out, "(retired)") || !strings.Contains(out, "accepts") {
		t.Fatalf("ledger after retire: %d %q %q", code, out, e)
	}

	// Forget alice.
	if code, out, e := c.run("subject", "forget", "--db", url, "--namespace", "users", "alice"); code != 0 || !strings.Contains(out, "users/alice forgotten: 1 key versions deleted") {
		t.Fatalf("forget: %d %q %q", code, out, e)
	}
	// A subject that never had a key: said so (its tombstone is written).
	if code, out, e := c.run("subject", "forget", "--db", url, "--namespace", "users", "carol"); code != 0 || !strings.Contains(out, "users/carol forgotten: it held no key") {
		t.Fatalf("forget of a subject without a key: %d %q %q", code, out, e)
	}
	_, _, col, _ = app()
	read := func(id int64, u string) (string, error) {
		var ct field.Ciphertext
		db.QueryRow(`SELECT body FROM msgs WHERE id = ?`, id).Scan(&ct)
		return col.OpenString(field.RowInt(id).With(u), ct)
	}
	if _, err := read(1, "alice"); !errors.Is(err, field.ErrSubjectErased) {
		t.Fatalf("alice after forget: %v", err)
	}
	if got, err := read(2, "bob"); err != nil || got != "bob's message" {
		t.Fatalf("bob after alice's forget: %q %v", got, err)
	}
	if code, out, e := c.run("subject", "audit", "--db", url); code != 0 || !strings.Contains(out, "users: 2 tombstones (ledger counts 2)") {
		t.Fatalf("audit: %d %q %q", code, out, e)
	}
	var audit []auditDoc
	if code, out, e := c.run("subject", "audit", "--db", url, "--json"); code != 0 || json.Unmarshal([]byte(out), &audit) != nil || len(audit) != 1 ||
		audit[0].Namespace != "users" || audit[0].Tombstones != 2 || audit[0].Counted != 2 || audit[0].Error != "" {
		t.Fatalf("audit --json: %d %q %q", code, out, e)
	}
	db.Exec(`DELETE FROM ward_subject_tombstones`)
	if code, out, e := c.run("subject", "audit", "--db", url); code != 1 || !strings.Contains(e, "deleted or planted tombstones") {
		t.Fatalf("audit after a deleted tombstone: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("subject", "reseal", "--db", url); code != 0 || !strings.Contains(out, "0 resealed") || !strings.Contains(out, "1 already current") {
		t.Fatalf("subject reseal: %d %q %q", code, out, e)
	}
	if code, out, e := c.run("subject", "rekey", "--db", url); code != 0 || !strings.Contains(out, "users: 1 of 1 subjects given a new key version") ||
		!strings.Contains(out, "msgs.body: 1 re-sealed") {
		t.Fatalf("subject rekey: %d %q %q", code, out, e)
	}
	if got, err := read(2, "bob"); err != nil || got != "bob's message" {
		t.Fatalf("bob after the subject-key rotation: %q %v", got, err)
	}
	if code, out, e := c.run("subject", "rotate", "--db", url); code != 0 || !strings.Contains(out, "users: 1 of 1 subjects given a new key version") ||
		!strings.Contains(e, "'ward subject rotate' is deprecated") || !strings.Contains(e, "use 'ward subject rekey'") {
		t.Fatalf("deprecated 'subject rotate': %d %q %q", code, out, e)
	}
	if code, _, e := c.run("subject", "forget", "--db", url, "bob"); code != 2 || !strings.Contains(e, "--namespace") {
		t.Fatalf("forget without namespace: %d %q", code, e)
	}
}

// withSubjects makes app.db with a recorded ledger and n subjects of the
// namespace users, each with a keyring-wrapped key; it returns its URL.
func withSubjects(t *testing.T, c *cliEnv, n int) string {
	t.Helper()
	ctx := context.Background()
	url, db := c.sqlite(t, "app.db")
	kr := c.loadKeyring(t)
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	if err := l.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	s, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: l, Namespace: "users"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.SealingKey(fmt.Sprintf("user-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

// rotatedSubjects is a CLI with a keyring rotated (not re-wrapped) over
// the n subjects of withSubjects, and the database's URL: every subject
// key is to re-wrap.
func rotatedSubjects(t *testing.T, n int) (*cliEnv, string) {
	t.Helper()
	c := newCLI(t)
	c.newKeyring(t)
	url := withSubjects(t, c, n)
	if code, out, e := c.run("keyring", "rotate", "--db", url, "--no-reseal"); code != 0 {
		t.Fatalf("rotate: %d %q %q", code, out, e)
	}
	return c, url
}

// fourShards runs a reseal of n subjects as four shards (run(i) runs
// shard i): each reseals some but not all, and together all of them.
func fourShards(t *testing.T, n int, run func(i int) (int, string, string)) {
	t.Helper()
	total := 0
	for i := range 4 {
		code, out, e := run(i)
		var got int
		if _, err := fmt.Sscanf(out, "users: %d resealed", &got); code != 0 || err != nil || got == n {
			t.Fatalf("shard %d of 4: %d %q %q", i, code, out, e)
		}
		total += got
	}
	if total != n {
		t.Fatalf("4 shards resealed %d subjects, want %d", total, n)
	}
}

// TestSubjectResealShard: 'ward subject reseal --shard i/n' reseals only
// its share of the subjects (it resealed all of them when the flag was
// registered but never parsed); the n shards together reseal every one.
func TestSubjectResealShard(t *testing.T) {
	const n = 16
	c, url := rotatedSubjects(t, n)
	if code, _, e := c.run("subject", "reseal", "--db", url, "--shard", "4/4"); code != 2 || !strings.Contains(e, "--shard") {
		t.Fatalf("--shard 4/4: %d %q", code, e)
	}
	fourShards(t, n, func(i int) (int, string, string) {
		return c.run("subject", "reseal", "--db", url, "--shard", fmt.Sprintf("%d/4", i))
	})
	if code, out, _ := c.run("subject", "reseal", "--db", url); code != 0 || !strings.Contains(out, "0 resealed") {
		t.Fatalf("after every shard: %d %q", code, out)
	}
}

// TestShardFromIndexedJob: '--shard /N' takes its index from
// $JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets in each pod,
// so N pods of one manifest share the work; without the variable it is a
// usage error.
func TestShardFromIndexedJob(t *testing.T) {
	const n = 16
	c, url := rotatedSubjects(t, n)
	if code, _, e := c.run("subject", "reseal", "--db", url, "--shard", "/4"); code != 2 || !strings.Contains(e, "JOB_COMPLETION_INDEX") {
		t.Fatalf("--shard /4 without the variable: %d %q", code, e)
	}
	fourShards(t, n, func(i int) (int, string, string) {
		c.env[JobIndexEnv] = fmt.Sprint(i)
		return c.run("subject", "reseal", "--db", url, "--shard", "/4")
	})
	// The same for a re-encryption: a pod's share of the rows.
	db, _, err := createDB(url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	for i := 1; i <= 20; i++ {
		db.Exec(`INSERT INTO notes VALUES (?, 'plain')`, i)
	}
	c.env[JobIndexEnv] = "0"
	code, out, e := c.run("encrypt-column", "--db", url, "--table", "notes", "--column", "body", "--text", "--shard", "/2", "--quiet")
	var got int
	if _, err := fmt.Sscanf(out, "notes.body: %d written", &got); code != 0 || err != nil || got == 0 || got == 20 {
		t.Fatalf("encrypt-column --shard /2 in pod 0: %d %q %q", code, out, e)
	}
}

// TestPlantedNamespacesEscaped: a namespace a database writer plants in
// the subject keys table, holding a terminal escape sequence and a line
// break, reaches the terminal escaped from 'ward subject audit' and 'ward
// subject rekey' (it was printed raw: it could clear the screen and forge
// lines).
func TestPlantedNamespacesEscaped(t *testing.T) {
	c := newCLI(t)
	url, db, s := c.usersStore(t)
	if _, err := s.SealingKey("u1"); err != nil {
		t.Fatal(err)
	}
	const evil = "\x1b[2J\x1b[Hall clear\nusers"
	for _, q := range []struct {
		sql  string
		args []any
	}{{`CREATE TEMP TABLE planted AS SELECT * FROM ward_subject_keys`, nil}, {`UPDATE planted SET namespace = ?`, []any{evil}}, {`INSERT INTO ward_subject_keys SELECT * FROM planted`, nil}} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"subject", "audit", "--db", url}, {"subject", "rekey", "--db", url}} {
		_, out, e := c.run(args...)
		if strings.ContainsAny(out+e, "\x1b") || !strings.Contains(out+e, `\x1b[2J`) {
			t.Errorf("%s: %q %q", strings.Join(args[:2], " "), out, e)
		}
	}
}

// TestAuditByIdentity: a forgotten user whose key rows a database writer
// puts back (or hid during a recovery and restored after) is found by
// 'ward subject audit --forget-journal', by identity: the command names
// them and exits 1 (before, audit had no journal option and saw nothing
// but counts); without the journal it reports as before.
func TestAuditByIdentity(t *testing.T) {
	c := newCLI(t)
	url, db, s := c.usersStore(t)
	for _, u := range []string{"alice", "bob"} {
		if _, err := s.SealingKey(u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`CREATE TABLE kept AS SELECT * FROM ward_subject_keys WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	jdir := filepath.Join(c.dir, "journal")
	if code, _, e := c.run("subject", "forget", "--db", url, "--namespace", "users", "--forget-journal", jdir, "alice"); code != 0 {
		t.Fatal(e)
	}
	if code, out, e := c.run("subject", "audit", "--db", url, "--forget-journal", jdir); code != 0 || !strings.Contains(out, "1 subjects forgotten, 0 of them hold a key") {
		t.Fatalf("audit after the forget: %d %q %q", code, out, e)
	}
	if _, err := db.Exec(`INSERT INTO ward_subject_keys SELECT * FROM kept`); err != nil {
		t.Fatal(err)
	}
	code, out, e := c.run("subject", "audit", "--db", url, "--forget-journal", jdir)
	if code != 1 || !strings.Contains(out, "1 of them hold a key or a session again: alice") || !strings.Contains(e, "ward ledger recover") {
		t.Fatalf("audit with alice's key put back: %d %q %q", code, out, e)
	}
	var docs []auditDoc
	if code, out, _ := c.run("subject", "audit", "--db", url, "--forget-journal", jdir, "--json"); code != 1 || json.Unmarshal([]byte(out), &docs) != nil ||
		len(docs) != 1 || docs[0].Journaled == nil || *docs[0].Journaled != 1 || !slices.Equal(docs[0].Resurrected, []string{"alice"}) {
		t.Fatalf("audit --json: %d %q", code, out)
	}
	if code, out, _ := c.run("subject", "audit", "--db", url); code != 0 || strings.Contains(out, "forget journals") {
		t.Fatalf("audit without the journal: %d %q", code, out)
	}
}

// usersStore makes a keyring and a SQLite database, and opens the subject
// store of its "users" namespace as a service beside the CLI would.
func (c *cliEnv) usersStore(t *testing.T) (url string, db *sql.DB, s *subject.Store) {
	t.Helper()
	c.newKeyring(t)
	url, db = c.sqlite(t, "app.db")
	s, err := subject.Open(context.Background(), subject.Config{DB: db, Dialect: field.SQLite, Keyring: c.loadKeyring(t),
		Ledger: &ledger.Ledger{DB: db, Dialect: field.SQLite}, Namespace: "users"})
	if err != nil {
		t.Fatal(err)
	}
	return url, db, s
}
