package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// IndexerOptions configure [Ledger.Indexer].
type IndexerOptions struct {
	// Gate is the process's view of its fleet (fleet.Registry.Gate): the
	// Indexer declares on it each re-key phase it follows ([IndexAck]),
	// which the fleet registry reports at the next heartbeat, so that the
	// re-key job waits for it. Without one, the process is not counted,
	// and a re-key must not run while it serves.
	Gate *fleetgate.Gate
	// FromV1 records an index the ledger does not know yet as the v1
	// index its rows already hold (field.NewBlindIndex: keyed by the
	// keyring's root, the column's one key), so that a re-key moves it to
	// v2. Without it, a new index is recorded v2 under the current epoch.
	FromV1 bool
}

// Indexer is one process's blind index that follows the index's re-keys
// (lifecycle.Reindex): the application stores both of the index's
// columns (Columns) and looks rows up by either, and the Indexer says what
// each holds. Refresh (or Watch) re-reads the ledger.
//
//	a, b := x.Lookup(email)            // SELECT … WHERE email_idx = a OR email_idx2 = b
//	a, b, err := x.WriteTx(ctx, tx, email) // INSERT … (email_idx, email_idx2) VALUES (…, a, b), in tx
//
// A nil value is SQL NULL (which matches nothing). Between re-keys one
// column holds the values and the other is NULL; during one, writes fill
// both and then the new one alone, and look-ups try both, so a look-up
// finds every row throughout, and a unique index on each column keeps the
// values unique across both: at every moment one column is complete and
// written by every process.
type Indexer struct {
	lg    *Ledger
	kr    *keyring.Keyring
	gate  *fleetgate.Gate
	norm  field.Normalizer
	db    string
	spec  IndexColumn
	state atomic.Pointer[indexerState]
	mu    sync.Mutex // serialises Refresh
}

// indexerState is what the Indexer computes in one phase.
type indexerState struct {
	counter   uint64 // the ledger's counter it was read at
	rec       IndexColumn
	cur, next *field.BlindIndex // next: the re-key's, nil between re-keys
}

// Indexer returns the re-keyable blind index c (c.Spare required), as
// [Ledger.Index] does for an index with one column.
func (l *Ledger) Indexer(ctx context.Context, kr *keyring.Keyring, c IndexColumn, norm field.Normalizer, o IndexerOptions) (*Indexer, error) {
	if c.Spare == "" {
		return nil, fmt.Errorf("ledger: index %s of %s.%s needs a spare column to be re-keyed", c.Name, c.Table, c.Column)
	}
	db, rec, err := l.resolveIndex(ctx, kr, c, norm, o.FromV1)
	if err != nil {
		return nil, err
	}
	x := &Indexer{lg: l, kr: kr, gate: o.Gate, norm: norm, db: db, spec: rec}
	if err := x.set(rec, 0); err != nil {
		return nil, err
	}
	return x, nil
}

// Columns returns the index's two columns, in the order Write and Lookup
// return their values.
func (x *Indexer) Columns() (string, string) { return x.spec.Index, x.spec.Spare }

// WriteTx returns what a row whose indexed value is value stores in each
// column, for a write in tx: it reads the ledger's record of the index in
// tx, with a shared lock on the ledger's row (SQLite: the write lock an
// immediate transaction already holds), so that a re-key's next phase is
// recorded only after tx ends, and computes the values of the phase it
// read. Call it in the transaction that writes the row, after the look-up
// that checks the value is free; a row written with values computed in a
// phase the re-key has left behind would escape the unique indexes.
func (x *Indexer) WriteTx(ctx context.Context, tx *sql.Tx, value string) (a, b []byte, err error) {
	return x.write(ctx, x.lg.inTx(tx), value)
}

// WriteIn is WriteTx for a transaction reached through q, an ORM's handle
// on it (an ent transaction's client, generated with the sql/execquery
// feature): the ledger's record is read through q, which must run its
// queries in the transaction that writes the row.
func (x *Indexer) WriteIn(ctx context.Context, q Querier, value string) (a, b []byte, err error) {
	in := x.lg.inTx(nil)
	in.via = q
	return x.write(ctx, in, value)
}

// write is WriteTx's work, reading the ledger through in.
func (x *Indexer) write(ctx context.Context, in *Ledger, value string) (a, b []byte, err error) {
	in.share = true
	st, err := in.Verified(ctx, x.kr)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: reading blind index %s of %s.%s: %w", x.spec.Name, x.spec.Table, x.spec.Column, err)
	}
	rec, err := x.record(st)
	if err != nil {
		return nil, nil, err
	}
	s := x.state.Load()
	if !rec.equal(s.rec) {
		x.mu.Lock()
		err = x.set(rec, st.Counter)
		x.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		s = x.state.Load()
	}
	switch {
	case s.next == nil:
		a, b = s.slots(s.cur.Compute(value), nil)
	case s.rec.Rekey.Phase == RekeyBoth:
		a, b = s.slots(s.cur.Compute(value), s.next.Compute(value))
	default:
		a, b = s.slots(nil, s.next.Compute(value))
	}
	return a, b, nil
}

// record finds the index in a verified state.
func (x *Indexer) record(st *State) (IndexColumn, error) {
	i := -1
	if st != nil {
		i = slices.IndexFunc(st.Indexes, x.spec.sameIndex)
	}
	if i < 0 {
		return IndexColumn{}, fmt.Errorf("ledger: blind index %s of %s.%s is no longer recorded: a database writer removed it, or the database went back in time", x.spec.Name, x.spec.Table, x.spec.Column)
	}
	return st.Indexes[i], nil
}

// Lookup returns what to compare each column with to find the rows whose
// indexed value is value.
func (x *Indexer) Lookup(value string) (a, b []byte) {
	s := x.state.Load()
	if s.next == nil {
		return s.slots(s.cur.Compute(value), nil)
	}
	return s.slots(s.cur.Compute(value), s.next.Compute(value))
}

// slots orders the current slot's and the other's values as the columns.
func (s *indexerState) slots(cur, other []byte) ([]byte, []byte) {
	if s.rec.Slot == 1 {
		return other, cur
	}
	return cur, other
}

// ErrRekeying means a blind index is being re-keyed (lifecycle.Reindex):
// the re-key fills both its columns itself.
var ErrRekeying = errors.New("ledger: the blind index is being re-keyed")

// Current returns the index computed into the column that holds the
// values between re-keys, and that column: what a job that writes indexes
// outside an application's transactions writes (reseal.Job's Index and
// IndexColumn: a migration that seals values and indexes them, or fills
// in missing indexes). It fails with ErrRekeying while a re-key is under
// way, as last read: wait for the re-key to end, Refresh, and run the job.
func (x *Indexer) Current() (*field.BlindIndex, string, error) {
	s := x.state.Load()
	if s.rec.Rekey != nil {
		return nil, "", fmt.Errorf("%w: %s of %s.%s (phase %q): run the job once it ends", ErrRekeying, s.rec.Name, s.rec.Table, s.rec.Column, s.rec.Rekey.Phase)
	}
	cur, _ := s.rec.Columns()
	return s.cur, cur, nil
}

// Record returns the ledger's record of the index, as last read.
func (x *Indexer) Record() IndexColumn { return x.state.Load().rec }

// Refresh reads the ledger's record of the index again and follows it: a
// re-key's phase is followed first and acknowledged after (IndexAck on the
// gate), so that a process is counted only once it writes as the phase
// asks.
func (x *Indexer) Refresh(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	st, err := x.lg.Verified(ctx, x.kr)
	if err != nil {
		return fmt.Errorf("ledger: reading blind index %s of %s.%s: %w", x.spec.Name, x.spec.Table, x.spec.Column, err)
	}
	rec, err := x.record(st)
	if err != nil {
		return err
	}
	if !rec.equal(x.state.Load().rec) {
		return x.set(rec, st.Counter)
	}
	return nil
}

// Watch calls Refresh every interval until ctx ends, reporting failures
// to onError (which may be nil); the Indexer keeps its last state.
func (x *Indexer) Watch(ctx context.Context, every time.Duration, onError func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := x.Refresh(ctx); err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
	}
}

// set computes rec's indexes, read at the ledger's counter, publishes
// them unless the Indexer follows a newer read, then acknowledges rec's
// phase (and the phases before it) on the gate. Callers hold mu.
func (x *Indexer) set(rec IndexColumn, counter uint64) error {
	if old := x.state.Load(); old != nil && old.counter > counter {
		return nil // read before what the Indexer follows: the ledger only moves on
	}
	s := &indexerState{rec: rec, counter: counter}
	var err error
	if s.cur, err = rec.Compute(x.kr, x.db, x.norm, rec.Epoch); err != nil {
		return err
	}
	if rec.Rekey != nil {
		if s.next, err = rec.Compute(x.kr, x.db, x.norm, rec.Rekey.Epoch); err != nil {
			return err
		}
	}
	x.state.Store(s)
	if rec.Rekey != nil {
		x.gate.Declare(IndexAck(rec, RekeyBoth))
		if rec.Rekey.Phase == RekeyFilled {
			x.gate.Declare(IndexAck(rec, RekeyFilled))
		}
	}
	return nil
}

// shareLock is the clause of a shared locking read in a dialect; SQLite
// has none (an immediate transaction holds the database's write lock, and
// a deferred one that read cannot write after another's commit).
func shareLock(d field.Dialect) string {
	switch d {
	case field.Postgres:
		return " FOR SHARE"
	case field.MySQL:
		return " LOCK IN SHARE MODE"
	}
	return ""
}
