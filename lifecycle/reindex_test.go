package lifecycle_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// indexApp is a service whose users table holds a sealed e-mail address
// and its blind index in two unique columns, as one registered process
// of its fleet.
type indexApp struct {
	kr    *keyring.Keyring
	db    lifecycle.Database
	col   *field.Column
	idx   *ledger.Indexer
	table string
	spec  ledger.IndexColumn
	// krPath and mk are the keyring file and its master key, for a child
	// process.
	krPath string
	mk     *local.MasterKey
}

func newIndexApp(t *testing.T, d dbtest.DB, fromV1 bool) *indexApp {
	t.Helper()
	ctx := context.Background()
	dialect, err := field.ParseDialect(d.Driver)
	if err != nil {
		t.Fatal(err)
	}
	krPath, mk := filepath.Join(t.TempDir(), "kr.json"), local.Generate()
	kr, err := keyring.Create(ctx, krPath, mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	a := &indexApp{kr: kr, krPath: krPath, mk: mk, table: d.Table(t, "users"), db: lifecycle.Database{Name: d.Name, DB: d.DB, Dialect: dialect,
		Ledger: &ledger.Ledger{DB: d.DB, Dialect: dialect, Table: d.Table(t, "ledger")}}}
	ix := d.Blob
	if d.Name == "mysql" {
		ix = "VARBINARY(40)"
	}
	if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, email %s, email_idx %s UNIQUE, email_idx2 %s UNIQUE)`, a.table, d.Blob, ix, ix)); err != nil {
		t.Fatal(err)
	}
	gate := fleetgate.New()
	if a.col, err = field.NewColumn(kr, a.table, "email", field.WithForms(gate)); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Ledger.RecordColumns(ctx, kr, ledger.ColumnOf(a.col, "id")); err != nil {
		t.Fatal(err)
	}
	reg := &fleet.Registry{DB: d.DB, Dialect: dialect, Ledger: a.db.Ledger, Gate: gate}
	a.spec = ledger.IndexColumn{Table: a.table, Column: "email", Index: "email_idx", Spare: "email_idx2"}
	if a.idx, err = a.db.Ledger.Indexer(ctx, kr, a.spec, field.Fold, ledger.IndexerOptions{Gate: gate, FromV1: fromV1}); err != nil {
		t.Fatal(err)
	}
	m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go a.idx.Watch(wctx, 20*time.Millisecond, nil)
	go kr.Watch(wctx, 20*time.Millisecond, nil)
	t.Cleanup(func() { cancel(); m.Leave(context.Background()) })
	return a
}

// signUp adds a user unless one has the address, in one transaction:
// false if one has.
func (a *indexApp) signUp(ctx context.Context, id int64, email string) (ok bool, err error) {
	tx, err := a.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		if field.Duplicate(err) {
			ok, err = false, nil
		}
	}()
	x, y := a.idx.Lookup(email)
	var n int
	if err := tx.QueryRowContext(ctx, a.db.Dialect.Rebind(`SELECT count(*) FROM `+a.table+` WHERE email_idx = ? OR email_idx2 = ?`), x, y).Scan(&n); err != nil || n > 0 {
		return false, err
	}
	ct, err := a.col.Seal(field.RowInt(id), []byte(email))
	if err != nil {
		return false, err
	}
	if x, y, err = a.idx.WriteTx(ctx, tx, email); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, a.db.Dialect.Rebind(`INSERT INTO `+a.table+` (id, email, email_idx, email_idx2) VALUES (?, ?, ?, ?)`), id, ct, x, y)
	return err == nil, err
}

// lookUp finds the user of an address.
func (a *indexApp) lookUp(ctx context.Context, email string) (int64, bool, error) {
	x, y := a.idx.Lookup(email)
	var id int64
	err := a.db.DB.QueryRowContext(ctx, a.db.Dialect.Rebind(`SELECT id FROM `+a.table+` WHERE email_idx = ? OR email_idx2 = ?`), x, y).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// traffic signs up addresses (each tried by two clients at once) and logs
// existing users in until stop, counting log-ins that found nobody or
// the wrong user.
func (a *indexApp) traffic(t *testing.T, existing []string, stop <-chan struct{}) (missed, done *atomic.Int64, wait func()) {
	missed, done = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	var next atomic.Int64
	next.Store(1000)
	for c := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := a.signUp(ctx, next.Add(1), fmt.Sprintf("new%d-%d@example.com", c/2, i)); err != nil && !field.Retryable(err) {
					t.Errorf("sign-up: %v", err)
					return
				}
				// Think time: a client that never pauses holds SQLite's one
				// write lock back to back, and starves every other writer
				// (the job's batches among them), whatever they are.
				time.Sleep(time.Millisecond)
				u := i % len(existing)
				if id, ok, err := a.lookUp(ctx, existing[u]); err != nil || !ok || id != int64(u) {
					missed.Add(1)
				}
				done.Add(1)
			}
		})
	}
	return missed, done, wg.Wait
}

// meanwhile returns an Observer that, after each step of a re-key (each
// wait for the fleet, the fill), lets the traffic run 20 more rounds
// before the re-key goes on, so that every phase sees sign-ups and
// log-ins.
func meanwhile(t *testing.T, done *atomic.Int64) lifecycle.Observer {
	more := func() {
		want := done.Load() + 20
		for deadline := time.Now().Add(time.Minute); done.Load() < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the traffic made no progress for a minute")
				return
			}
		}
	}
	return lifecycle.Observer{
		Ready:  func(string, string, fleet.Awaited) { more() },
		Column: func(lifecycle.ColumnResult, error) { more() },
	}
}

// TestReindex: a v1 blind index moves to v2 under the current epoch,
// then after a rotation to the next epoch, while four clients sign up
// (each address tried by two at once) and log in: every log-in finds its
// user throughout, no address gets two accounts, the old column ends
// empty, and the old epoch's key can be retired only once the index left
// it.
func TestReindex(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newIndexApp(t, d, true)
		var existing []string
		for i := range 30 {
			existing = append(existing, fmt.Sprintf("User%d@Example.com", i))
			if ok, err := a.signUp(ctx, int64(i), existing[i]); !ok || err != nil {
				t.Fatalf("seeding %d: %v", i, err)
			}
		}
		opts := lifecycle.ReindexOptions{Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}, Wait: time.Minute}
		rekey := func(from, to keyring.KeyID) {
			t.Helper()
			stop := make(chan struct{})
			missed, done, wait := a.traffic(t, existing, stop)
			o := opts
			o.Observer = meanwhile(t, done)
			res, err := lifecycle.Reindex(ctx, a.kr, a.db, a.table, "email", "", o)
			close(stop)
			wait()
			if err != nil || res.From != from || res.To != to || res.Index.Epoch != to || res.Index.Rekey != nil {
				t.Fatalf("re-key: %+v %v", res, err)
			}
			if n := missed.Load(); n > 0 {
				t.Fatalf("%d log-ins found nobody or someone else during the re-key", n)
			}
			// A sign-up in flight across the switch may have written the
			// old column since; running the re-key again clears it.
			if again, err := lifecycle.Reindex(ctx, a.kr, a.db, a.table, "email", "", opts); err != nil || !again.Current {
				t.Fatalf("the re-key again: %+v %v", again, err)
			}
			a.checkIndex(t, res.Index)
		}
		rekey(0, a.kr.Primary().ID)
		e1 := a.kr.Primary().ID
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute, Fleet: opts.Fleet}); err != nil {
			t.Fatal(err)
		}
		var refs *lifecycle.ReferencedError
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, e1); !errors.As(err, &refs) {
			t.Fatalf("retiring the index's epoch: %v", err)
		}
		rekey(e1, a.kr.Primary().ID)
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, e1); err != nil {
			t.Fatalf("retiring the epoch the index left: %v", err)
		}
	})
}

// checkIndex checks the table after a re-key: one account per address,
// every value indexed under the new epoch in the new column and the old
// column empty.
func (a *indexApp) checkIndex(t *testing.T, rec ledger.IndexColumn) {
	t.Helper()
	if err := a.idx.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, old := rec.Columns()
	rows, err := a.db.DB.Query(fmt.Sprintf(`SELECT id, email, %s, %s FROM %s`, cur, old, a.table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]int64{}
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		var idx, stale []byte
		if err := rows.Scan(&id, &ct, &idx, &stale); err != nil {
			t.Fatal(err)
		}
		email, err := a.col.OpenString(field.RowInt(id), ct)
		if err != nil {
			t.Fatal(err)
		}
		email = field.NormalizeFold(email)
		if other, dup := seen[email]; dup {
			t.Fatalf("%s has two accounts, %d and %d", email, other, id)
		}
		seen[email] = id
		want, _ := a.idx.Lookup(email)
		if rec.Slot == 1 {
			_, want = a.idx.Lookup(email)
		}
		if e, err := field.IndexEpoch(idx); err != nil || e != rec.Epoch || !bytes.Equal(idx, want) || stale != nil {
			t.Fatalf("row %d: index %x (epoch %v, %v), old column %x", id, idx, e, err, stale)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
