package main

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// revokeEnv is an application with a per-subject column messages.body and
// a reader holding a grant of it.
type revokeEnv struct {
	c       *cliEnv
	url     string
	db      *sql.DB
	d       field.Dialect
	reader  *local.MasterKey
	grantID string
	file    string
}

func newRevokeEnv(t *testing.T, name string) *revokeEnv {
	ctx := context.Background()
	e := &revokeEnv{c: newCLI(t)}
	e.c.newKeyring(t)
	e.url, _ = e.c.sqlite(t, "app.db")
	blob := "BLOB"
	if name == "postgres" {
		if e.url = pgtest.URL(t); e.url == "" {
			t.Skip(pgtest.Env + " is not set")
		}
		blob = "BYTEA"
	}
	var err error
	if e.db, e.d, err = openDB(e.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	if _, err := e.db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, body ` + blob + ` NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	kr := e.keyring(t)
	l := &ledger.Ledger{DB: e.db, Dialect: e.d}
	if err := l.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordColumns(ctx, kr, ledger.ColumnOf(e.body(t, kr), "id")); err != nil {
		t.Fatal(err)
	}
	e.send(t, 1, "alice's first")
	readerKey := filepath.Join(e.c.dir, "reader.mk")
	if code, _, stderr := e.c.run("keyring", "gen-master-key", "--out", readerKey); code != 0 {
		t.Fatal(stderr)
	}
	e.reader, _ = local.Load(readerKey, nil)
	e.file = filepath.Join(e.c.dir, "bodies.grant")
	code, stdout, stderr := e.c.run("grant", "--db", e.url, "--scope", "messages.body", "--to-master-key-file", readerKey, "--out", e.file)
	id := regexp.MustCompile(`grant (g-[0-9a-f]{16})`).FindStringSubmatch(stdout)
	if code != 0 || id == nil {
		t.Fatalf("grant: %d %q %q", code, stdout, stderr)
	}
	e.grantID = id[1]
	return e
}

// keyring is the application's keyring as the file holds it now.
func (e *revokeEnv) keyring(t *testing.T) *keyring.Keyring {
	kr, err := keyring.Load(context.Background(), e.c.krPath, e.c.mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// body is the application's column, under a fresh store (a process that
// starts now, or whose cache expired).
func (e *revokeEnv) body(t *testing.T, kr *keyring.Keyring) *field.Column {
	l := &ledger.Ledger{DB: e.db, Dialect: e.d}
	s, err := subject.Open(context.Background(), subject.Config{DB: e.db, Dialect: e.d, Keyring: kr, Ledger: l, Namespace: "users"})
	if err != nil {
		t.Fatal(err)
	}
	col, err := field.NewColumn(kr, "messages", "body", field.Bind("user_id"), field.PerSubject(s, "user_id"))
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// send stores alice's message id, sealed by a process started now.
func (e *revokeEnv) send(t *testing.T, id int64, text string) []byte {
	ct, err := e.body(t, e.keyring(t)).SealString(field.RowInt(id).With("alice"), text)
	if err != nil {
		t.Fatal(err)
	}
	q := `INSERT INTO messages VALUES (` + e.d.Placeholder(1) + `, 'alice', ` + e.d.Placeholder(2) + `)`
	if _, err := e.db.Exec(q, id, ct.Bytes()); err != nil {
		t.Fatal(err)
	}
	return ct.Bytes()
}

// ct parses a stored value.
func ct(t *testing.T, b []byte) field.Ciphertext {
	c, err := field.ParseCiphertext(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stored reads message id as the database holds it now.
func (e *revokeEnv) stored(t *testing.T, id int64) []byte {
	var b []byte
	if err := e.db.QueryRow(`SELECT body FROM messages WHERE id = `+e.d.Placeholder(1), id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// grantReader is the grant holder's reader: its keys are kept for an hour
// once opened (a holder keeps what it unwrapped).
func (e *revokeEnv) grantReader(t *testing.T) *field.Column {
	g, err := keyring.LoadGrant(context.Background(), e.file, e.reader)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := subject.NewGrantKeys(subject.Config{DB: e.db, Dialect: e.d, TTL: time.Hour}, g, "messages", "body")
	if err != nil {
		t.Fatal(err)
	}
	col, err := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(keys, "user_id"))
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// TestGrantRevokeRevokes: after 'ward grant revoke' of a grant of a
// per-subject column, no value sealed afterwards opens with what its
// holder kept (the subject's column key, unwrapped before), nor with a
// fresh reader after a database writer put the grant's old wraps back
// into every key row; values sealed before stay readable with the kept
// key, as SECURITY.md says of copies taken before. On SQLite and
// PostgreSQL.
func TestGrantRevokeRevokes(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			e := newRevokeEnv(t, name)
			first := e.stored(t, 1)
			kept := e.grantReader(t)
			if pt, err := kept.OpenString(field.RowInt(1).With("alice"), ct(t, first)); err != nil || pt != "alice's first" {
				t.Fatalf("the grant opens alice's message: %q %v", pt, err)
			}
			var planted []byte // the grant's wraps, as a backup holds them
			if err := e.db.QueryRow(`SELECT scoped FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&planted); err != nil || planted == nil {
				t.Fatalf("alice's wraps: %v", err)
			}
			code, stdout, stderr := e.c.run("grant", "revoke", e.grantID, "--db", e.url, "--wait", "10s", "--subject-ttl", "0s")
			if code != 0 || !strings.Contains(stdout, "users: 1 of 1 subjects given a new key version") || !strings.Contains(stdout, "messages.body: 1 re-sealed under their subject's newest key") {
				t.Fatalf("revoke: %d %q %q", code, stdout, stderr)
			}
			later := e.send(t, 2, "alice's second")
			if _, err := kept.OpenString(field.RowInt(2).With("alice"), ct(t, later)); err == nil {
				t.Fatal("a value sealed after the revocation opened with the key the grant's holder kept")
			}
			if _, err := e.db.Exec(`UPDATE ward_subject_keys SET scoped = `+e.d.Placeholder(1)+` WHERE subject = 'alice'`, planted); err != nil {
				t.Fatal(err)
			}
			after := e.send(t, 3, "alice's third")
			for id, b := range map[int64][]byte{2: later, 3: after, 1: e.stored(t, 1)} {
				if _, err := e.grantReader(t).OpenString(field.RowInt(id).With("alice"), ct(t, b)); err == nil {
					t.Errorf("message %d opened with the revoked grant and its wraps put back", id)
				}
			}
			if _, err := kept.OpenString(field.RowInt(1).With("alice"), ct(t, first)); err != nil {
				t.Errorf("the copy taken before stays readable with the kept key: %v", err)
			}
		})
	}
}

// TestSealRemovesRevokedWraps: a key row about to seal loses the wraps of
// a column no live grant opens (a revoked grant's, put back by a database
// writer), so that its holder cannot unwrap the key that seals.
func TestSealRemovesRevokedWraps(t *testing.T) {
	e := newRevokeEnv(t, "sqlite")
	var planted []byte
	if err := e.db.QueryRow(`SELECT scoped FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&planted); err != nil || planted == nil {
		t.Fatalf("alice's wraps: %v", err)
	}
	if code, _, stderr := e.c.run("grant", "revoke", e.grantID, "--db", e.url, "--offline"); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := e.db.Exec(`UPDATE ward_subject_keys SET scoped = ? WHERE subject = 'alice'`, planted); err != nil {
		t.Fatal(err)
	}
	second := e.send(t, 2, "alice's second")
	var scoped []byte
	if err := e.db.QueryRow(`SELECT scoped FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&scoped); err != nil || scoped != nil {
		t.Fatalf("the planted wraps stayed: %x %v", scoped, err)
	}
	if _, err := e.grantReader(t).OpenString(field.RowInt(2).With("alice"), ct(t, second)); !errors.Is(err, field.ErrSubjectKeyMissing) {
		t.Fatalf("the revoked grant after its wraps were put back: %v", err)
	}
}

// TestGrantRevokeSubjectTTL: the re-key waits --subject-ttl between the
// new key versions and the re-seal: interrupted in that wait (once alice
// has her new version), the revocation has re-sealed nothing, and says it
// was interrupted.
func TestGrantRevokeSubjectTTL(t *testing.T) {
	e := newRevokeEnv(t, "sqlite")
	before := e.stored(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			var n int
			if e.db.QueryRow(`SELECT COUNT(*) FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&n); n >= 2 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	code, stdout, stderr := e.c.runCtx(ctx, "grant", "revoke", e.grantID, "--db", e.url, "--wait", "10s", "--subject-ttl", "1h")
	if code == 0 || !strings.Contains(stdout, "users: 1 of 1 subjects given a new key version") || strings.Contains(stdout, "re-sealed under their subject's newest key") {
		t.Fatalf("revoke: %d %q %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "interrupted") {
		t.Errorf("stderr: %q", stderr)
	}
	if got := e.stored(t, 1); string(got) != string(before) {
		t.Error("a value was re-sealed before --subject-ttl passed")
	}
}

// TestGrantRevokeKeyFloor: after 'ward grant revoke' of a grant of a
// per-subject column, a database writer deletes the key versions the
// revocation created and puts the grant's wraps back into the row left
// (what a restore of the key table from before the revocation does). A
// store does not seal under that older version, whose column key the
// grant's holder kept: the revocation raised the namespace's key floor in
// the ledger, and the store gives alice a new version above it first. On
// SQLite and PostgreSQL.
func TestGrantRevokeKeyFloor(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			e := newRevokeEnv(t, name)
			kept := e.grantReader(t)
			if _, err := kept.OpenString(field.RowInt(1).With("alice"), ct(t, e.stored(t, 1))); err != nil {
				t.Fatalf("the grant opens alice's message: %v", err)
			}
			var old int64
			var planted []byte
			if err := e.db.QueryRow(`SELECT version, scoped FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&old, &planted); err != nil {
				t.Fatal(err)
			}
			if code, stdout, stderr := e.c.run("grant", "revoke", e.grantID, "--db", e.url, "--wait", "10s", "--subject-ttl", "0s"); code != 0 {
				t.Fatalf("revoke: %d %q %q", code, stdout, stderr)
			}
			floor, _ := subject.KeyFloor(1)
			var newest int64
			if err := e.db.QueryRow(`SELECT MAX(version) FROM ward_subject_keys WHERE subject = 'alice'`).Scan(&newest); err != nil || newest < int64(floor) {
				t.Fatalf("the revocation's version %d, under the floor %d (%v)", newest, floor, err)
			}
			p := e.d.Placeholder
			if _, err := e.db.Exec(`DELETE FROM ward_subject_keys WHERE subject = 'alice' AND version > `+p(1), old); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(`UPDATE ward_subject_keys SET scoped = `+p(1)+` WHERE subject = 'alice'`, planted); err != nil {
				t.Fatal(err)
			}
			later := e.send(t, 2, "alice's second")
			if v, ok := ct(t, later).SubjectKeyVersion(); !ok || int64(v) == old || v < floor {
				t.Fatalf("sealed under version %d (the old one %d, the floor %d)", v, old, floor)
			}
			for _, r := range []*field.Column{kept, e.grantReader(t)} {
				if _, err := r.OpenString(field.RowInt(2).With("alice"), ct(t, later)); err == nil {
					t.Fatal("a value sealed after the revocation and the writer's deletion opened with the revoked grant")
				}
			}
			if pt, err := e.body(t, e.keyring(t)).OpenString(field.RowInt(2).With("alice"), ct(t, later)); err != nil || pt != "alice's second" {
				t.Fatalf("the application opens it: %q %v", pt, err)
			}
		})
	}
}
