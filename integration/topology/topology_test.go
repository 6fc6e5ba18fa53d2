// Package topology tests ward on the database topologies production runs:
// a primary with a streaming standby (asynchronous and synchronous), a
// failover that loses its last commits, and the recovery after it. Each
// test starts its own throwaway clusters (internal/pgcluster, Debian's
// PostgreSQL on Unix sockets only).
package topology

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/pgcluster"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// pair is a primary and its standby.
type pair struct {
	primary, standby *pgcluster.Cluster
	pdb, sdb         *sql.DB
}

func startPair(t *testing.T, synchronous bool) *pair {
	t.Helper()
	p, s := pgcluster.PairForTest(t, "ward_standby")
	pr := &pair{primary: p, standby: s, pdb: p.OpenForTest(t), sdb: s.OpenForTest(t)}
	if synchronous {
		// Application transactions commit locally; ward's own wait for
		// the standby to apply them (sqltable.Durable).
		pr.exec(t, pr.pdb, `ALTER SYSTEM SET synchronous_standby_names = 'ward_standby'`,
			`ALTER SYSTEM SET synchronous_commit = 'local'`, `SELECT pg_reload_conf()`)
		pr.waitFor(t, pr.pdb, `SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'`)
	}
	return pr
}

func (pr *pair) exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// waitFor polls a boolean query until it is true (at most 30 s).
func (pr *pair) waitFor(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	for range 600 {
		var ok bool
		if err := db.QueryRow(query).Scan(&ok); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("still false after 30 s: %s", query)
}

// caughtUp waits until the standby has replayed everything the primary
// wrote so far.
func (pr *pair) caughtUp(t *testing.T) {
	t.Helper()
	var lsn string
	if err := pr.pdb.QueryRow(`SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	pr.waitFor(t, pr.sdb, fmt.Sprintf(`SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '%s') >= 0`, lsn))
}

// detach stops the standby's streaming: what the primary commits from now
// on is the tail a failover loses.
func (pr *pair) detach(t *testing.T) {
	t.Helper()
	pr.caughtUp(t)
	pr.exec(t, pr.sdb, `ALTER SYSTEM SET primary_conninfo = ''`, `SELECT pg_reload_conf()`)
	pr.waitFor(t, pr.pdb, `SELECT count(*) = 0 FROM pg_stat_replication`)
}

// failover crashes the primary and promotes the standby.
func (pr *pair) failover(t *testing.T) {
	t.Helper()
	if err := pr.primary.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := pr.standby.Promote(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// service is an application: a keyring file, a ledger, a column sealed
// per row (notes.body, re-encrypted from plaintext by a job), subject
// keys of users with a forget journal, and a process in the fleet.
type service struct {
	kr      *keyring.Keyring
	db      *sql.DB
	lg      *ledger.Ledger
	col     *field.Column
	journal string
	users   *subject.Store
	member  *fleet.Member
}

func newService(t *testing.T, db *sql.DB, dir string) *service {
	t.Helper()
	ctx := context.Background()
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(dir, "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	s := &service{kr: kr, journal: filepath.Join(dir, "journal")}
	s.use(t, db)
	if err := s.lg.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 2000) g`); err != nil {
		t.Fatal(err)
	}
	return s
}

// use points the service at a database (a start, or a restart after a
// failover).
func (s *service) use(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	s.db = db
	s.lg = &ledger.Ledger{DB: db, Dialect: field.Postgres}
	j, err := forgetlog.Open(s.journal, s.kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if s.users, err = subject.Open(ctx, subject.Config{DB: db, Dialect: field.Postgres, Keyring: s.kr, Ledger: s.lg, Namespace: "users", Journal: j, TTL: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if s.col, err = field.NewColumn(s.kr, "notes", "body", field.WithEncoding(field.Text)); err != nil {
		t.Fatal(err)
	}
}

// encrypt runs the job that seals notes.body from plaintext.
func (s *service) encrypt(t *testing.T) reseal.Stats {
	t.Helper()
	ctx := context.Background()
	if err := s.lg.RecordColumns(ctx, s.kr, ledger.ColumnOf(s.col, "id")); err != nil {
		t.Fatal(err)
	}
	st, err := (&reseal.Job{DB: s.db, Dialect: field.Postgres, Column: s.col, Key: "id", FromPlaintext: true, BatchSize: 250}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (s *service) census(t *testing.T) reseal.Census {
	t.Helper()
	c, err := (&reseal.Job{DB: s.db, Dialect: field.Postgres, Column: s.col, Key: "id"}).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *service) join(t *testing.T) {
	t.Helper()
	m, err := (&fleet.Registry{DB: s.db, Dialect: field.Postgres}).Join(context.Background(), s.kr, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.member = m
	t.Cleanup(func() { m.Leave(context.Background()) })
}

// TestStandbyRefused: ward's own tables are refused on a standby, by the
// ledger, the fleet registry and the subject store, with the rule named.
func TestStandbyRefused(t *testing.T) {
	pr := startPair(t, false)
	ctx := context.Background()
	s := newService(t, pr.pdb, t.TempDir())
	s.join(t)
	pr.caughtUp(t)
	kr := s.kr
	if err := (&ledger.Ledger{DB: pr.sdb, Dialect: field.Postgres}).Check(ctx, kr); !errors.Is(err, ledger.ErrStandby) {
		t.Fatalf("the ledger on a standby: %v", err)
	}
	if _, err := (&fleet.Registry{DB: pr.sdb, Dialect: field.Postgres}).List(ctx, kr); !errors.Is(err, ledger.ErrStandby) {
		t.Fatalf("the registry on a standby: %v", err)
	}
	_, err := subject.Open(ctx, subject.Config{DB: pr.sdb, Dialect: field.Postgres, Keyring: kr, Namespace: "users"})
	if !errors.Is(err, ledger.ErrStandby) {
		t.Fatalf("subject keys on a standby: %v", err)
	}
	if msg := err.Error(); !contains(msg, "primary only", "pg_is_in_recovery()", "replicas") {
		t.Fatalf("the refusal does not name the rule: %s", msg)
	}
	// An application may read ciphertexts there: a value sealed on the
	// primary opens from the standby's copy.
	ct, err := s.col.SealString(field.RowInt(1), "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.pdb.Exec(`UPDATE notes SET body = $1 WHERE id = 1`, ct); err != nil {
		t.Fatal(err)
	}
	pr.caughtUp(t)
	var got field.Ciphertext
	if err := pr.sdb.QueryRow(`SELECT body FROM notes WHERE id = 1`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if pt, err := s.col.OpenString(field.RowInt(1), got); err != nil || pt != "hello" {
		t.Fatalf("a ciphertext read from the standby: %q %v", pt, err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
