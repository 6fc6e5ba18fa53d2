package subject

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/pgcluster"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestRolledBackDatabaseOpensNothing: the database goes back to before a
// forget (a promoted standby that missed it, a restore): alice's key row
// is back and her tombstone gone. A store on it used to refuse sealing
// but hand out her key for opening, so her values opened again through
// the library. Now every key read first verifies the ledger against the
// keyring file's anchor: opening and sealing both fail with
// ledger.ErrReplayed until a recovery; bob, never forgotten, fails too
// (the store cannot tell who is back).
func TestRolledBackDatabaseOpensNothing(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Minute)
		col := e.column(t, s)
		e.insert(t, col, 1, "alice", "alice's message")
		e.insert(t, col, 2, "bob", "bob's message")
		alice, err := s.SealingKey("alice")
		if err != nil {
			t.Fatal(err)
		}
		tables := []string{e.keys, e.tombs, e.ledger.Table}
		for _, tb := range tables {
			if _, err := e.db.Exec(fmt.Sprintf(`CREATE TABLE bak_%s AS SELECT * FROM %s`, tb, tb)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if _, err := e.db.Exec(fmt.Sprintf(`DELETE FROM %s`, tb)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(fmt.Sprintf(`INSERT INTO %s SELECT * FROM bak_%s`, tb, tb)); err != nil {
				t.Fatal(err)
			}
		}
		fresh := e.store(t, time.Minute) // a process started on the rolled-back database
		if _, err := fresh.OpeningKey("alice", alice.Version()); !errors.Is(err, ledger.ErrReplayed) {
			t.Fatalf("alice's key from a rolled-back database: %v", err)
		}
		if _, err := fresh.SealingKey("bob"); !errors.Is(err, ledger.ErrReplayed) {
			t.Fatalf("sealing on a rolled-back database: %v", err)
		}
		var body []byte
		err = e.db.QueryRow(fmt.Sprintf(`SELECT body FROM %s WHERE id = 1`, e.messages)).Scan(&body)
		if err != nil {
			t.Fatal(err)
		}
		ct, _ := field.ParseCiphertext(body)
		if pt, err := e.column(t, fresh).Open(field.RowInt(1).With("alice"), ct); err == nil {
			t.Fatalf("alice's value opened on the rolled-back database: %q", pt)
		}
	})
}

// switchable sends new connections to the primary until flipped, then to
// the standby: a pooler that routes a read to a standby after the store's
// check at Open passed on the primary.
type switchable struct {
	primary, standby driver.Connector
	flipped          atomic.Bool
}

func (s *switchable) Connect(ctx context.Context) (driver.Conn, error) {
	if s.flipped.Load() {
		return s.standby.Connect(ctx)
	}
	return s.primary.Connect(ctx)
}

func (s *switchable) Driver() driver.Driver { return s.primary.Driver() }

// TestKeyReadOnAStandbyRefused: a store opened on the primary, whose later
// connections reach a standby (PgBouncer over a primary and a lagging
// standby), used to read subjects' keys there: a forgotten user's key
// that the standby had not yet deleted opened their values. Every key
// read now asks, in its own statement, whether it runs on a standby.
func TestKeyReadOnAStandbyRefused(t *testing.T) {
	ctx := context.Background()
	p, sb := pgcluster.PairForTest(t, "ward_keyread")
	connector := func(url string) driver.Connector {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		return stdlib.GetConnector(*cfg)
	}
	sw := &switchable{primary: connector(p.URL), standby: connector(sb.URL)}
	db := sql.OpenDB(sw)
	db.SetMaxIdleConns(0) // every statement on a connection of its own, as the pooler decides
	defer db.Close()
	e := &env{db: db, d: field.Postgres, path: filepath.Join(t.TempDir(), "kr.json"), mk: local.Generate(),
		keys: "subject_keys", tombs: "tombstones"}
	var err error
	if e.kr, err = keyring.Create(ctx, e.path, e.mk, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	e.ledger = &ledger.Ledger{DB: db, Dialect: field.Postgres}
	if err := e.ledger.Record(ctx, e.kr); err != nil {
		t.Fatal(err)
	}
	s := e.store(t, time.Nanosecond)
	alice, err := s.SealingKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	pdb, sdb := p.OpenForTest(t), sb.OpenForTest(t)
	if err := ledger.WaitReplayed(ctx, pdb, sdb, 0); err != nil {
		t.Fatal(err)
	}
	sw.flipped.Store(true)
	if _, err := s.OpeningKey("alice", alice.Version()); !errors.Is(err, ledger.ErrStandby) {
		t.Fatalf("a key read on the standby: %v", err)
	}
	sw.flipped.Store(false)
	if _, err := s.OpeningKey("alice", alice.Version()); err != nil {
		t.Fatalf("on the primary again: %v", err)
	}
}

// TestKeyReadThroughPgBouncer: the same on the real thing — Debian's
// PgBouncer with two hosts, a primary and its standby, handing server
// connections round-robin (a read-scaling pool). A user is forgotten on
// the primary while the standby's replay is paused; then every read of
// the forgotten key through the pooler, 40 of them, is refused: on the
// primary as forgotten, on the standby with ledger.ErrStandby (at least
// one read reached it), and none opens.
func TestKeyReadThroughPgBouncer(t *testing.T) {
	ctx := context.Background()
	p, sb := pgcluster.PairForTest(t, "ward_pooled")
	pool := pgcluster.PoolerForTest(t, p, sb)
	pdb, sdb := p.OpenForTest(t), sb.OpenForTest(t)
	e := &env{db: pdb, d: field.Postgres, path: filepath.Join(t.TempDir(), "kr.json"), mk: local.Generate(),
		keys: "subject_keys", tombs: "tombstones"}
	var err error
	if e.kr, err = keyring.Create(ctx, e.path, e.mk, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	e.ledger = &ledger.Ledger{DB: pdb, Dialect: field.Postgres}
	if err := e.ledger.Record(ctx, e.kr); err != nil {
		t.Fatal(err)
	}
	writer := e.store(t, time.Nanosecond)
	alice, err := writer.SealingKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.WaitReplayed(ctx, pdb, sdb, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec(`SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	defer sdb.Exec(`SELECT pg_wal_replay_resume()`)
	if err := writer.Forget(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	pooled, err := sql.Open("pgx", pool.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	pooled.SetMaxIdleConns(0) // a new client connection per statement: the pooler decides where it goes
	// Four transactions at once make the pooler open four server
	// connections, to its two hosts in turn; from then on it hands them
	// out round-robin, as a busy pool does.
	var txs []*sql.Tx
	for range 4 {
		tx, err := pooled.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`SELECT 1`); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	for _, tx := range txs {
		tx.Commit()
	}
	lg := &ledger.Ledger{DB: pooled, Dialect: field.Postgres}
	var reader *Store
	for range 200 { // opening checks the ledger: refused whenever a statement lands on the standby
		if reader, err = Open(ctx, Config{DB: pooled, Dialect: field.Postgres, Keyring: e.kr, Ledger: lg, Namespace: "users",
			TTL: time.Nanosecond, KeysTable: e.keys, TombstonesTable: e.tombs}); err == nil {
			break
		} else if !errors.Is(err, ledger.ErrStandby) {
			t.Fatal(err)
		}
	}
	if reader == nil {
		t.Fatalf("the store never opened through the pooler: %v", err)
	}
	standby := 0
	for range 40 {
		_, err := reader.OpeningKey("alice", alice.Version())
		switch {
		case err == nil:
			t.Fatal("a forgotten user's key opened through the pooler")
		case errors.Is(err, ledger.ErrStandby):
			standby++
		}
	}
	if standby == 0 {
		t.Fatal("no read reached the standby: the pooler did not route to it")
	}
	t.Logf("%d of 40 reads reached the standby and were refused there", standby)
}
