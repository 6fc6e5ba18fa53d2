package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// ReindexOptions configure [Reindex].
type ReindexOptions struct {
	// Fleet configures each wait for the registered processes.
	Fleet fleet.WaitOptions
	// Wait bounds each wait; 0 waits until ctx ends.
	Wait time.Duration
	// Normalizer is the index's normaliser when it is the application's
	// own (the ledger records only its name and version, which must
	// match); zero: the normaliser of package field the ledger names.
	Normalizer field.Normalizer
	// Observer hears the waits (Waiting, Ready) and the fill (Column).
	Observer Observer
}

// ReindexResult is what [Reindex] did.
type ReindexResult struct {
	// Index is the ledger's record of the index when the re-key ended.
	Index ledger.IndexColumn
	// From and To are the epochs of the index before and after (From 0:
	// a v1 index).
	From, To keyring.KeyID
	// Current is true when the index was already under the current epoch:
	// nothing was done.
	Current bool
	// Fill is the job that filled the new column (its Indexed counts the
	// rows given their new index).
	Fill reseal.Stats
	// Cleared counts the old column's values set to NULL.
	Cleared int64
}

// ErrReindexIncomplete means the fill left rows without their new index
// (values that did not open, or of users whose keys only they hold): the
// re-key stays in its first phase, and runs again to finish.
var ErrReindexIncomplete = errors.New("lifecycle: the re-key left rows without their new index")

// Reindex moves a blind index recorded with a spare column
// ([ledger.Ledger.Indexer]) to the current integrity epoch, with every
// process serving throughout: it records the re-key, waits until every
// registered process writes both columns (ledger.IndexAck), fills the
// spare column of every row from its sealed value (a reseal.Job, by
// compare-and-swap), records that it is filled, waits until every process
// writes it alone, clears the old column and records the switch. Each step
// is recorded before the next, so running Reindex again after an error
// or a kill continues where it stopped; run it after a rotation, then
// retire the old key. The sealed column must be recorded in the ledger
// (ledger.Ledger.RecordColumns).
func Reindex(ctx context.Context, kr *keyring.Keyring, d Database, table, column, name string, opts ReindexOptions) (ReindexResult, error) {
	lg := d.ledger()
	rec, col, norm, err := rekeyTarget(ctx, kr, d, table, column, name, opts)
	if err != nil {
		return ReindexResult{}, err
	}
	res := ReindexResult{From: rec.Epoch, To: kr.Primary().ID}
	if rec.Rekey == nil {
		if rec.Epoch == kr.Primary().ID {
			// Nothing to move; a write a process prepared before the last
			// re-key's switch may have landed in the old column since:
			// clear it again.
			_, spare := rec.Columns()
			res.Index, res.Current = rec, true
			res.Cleared, err = clearColumn(ctx, d, rec.Table, spare)
			return res, err
		}
		if rec, err = startRekey(ctx, kr, d, rec); err != nil {
			return res, err
		}
	}
	res.To = rec.Rekey.Epoch
	wait := RotateOptions{Fleet: opts.Fleet, Wait: opts.Wait, Observer: opts.Observer}
	if rec.Rekey.Phase == ledger.RekeyBoth {
		if err := await(ctx, kr, []Database{d}, wait, "writing blind index "+rec.Name+" into both columns", ackOf(rec, ledger.RekeyBoth)); err != nil {
			return res, err
		}
		if res.Fill, err = fillIndex(ctx, kr, d, rec, col, norm, opts.Observer); err != nil {
			return res, err
		}
		if rec, err = lg.ChangeIndex(ctx, kr, rec, func(c *ledger.IndexColumn) error { return advance(c, res.To, ledger.RekeyBoth, ledger.RekeyFilled) }); err != nil {
			return res, err
		}
	}
	if err := await(ctx, kr, []Database{d}, wait, "writing blind index "+rec.Name+" into its new column alone", ackOf(rec, ledger.RekeyFilled)); err != nil {
		return res, err
	}
	// A row a process wrote with a value it computed before it followed
	// the first phase (a request that was in flight across the wait) has
	// no new index: fill again, now that every process writes the new
	// column, and check that none is left.
	again, err := fillIndex(ctx, kr, d, rec, col, norm, opts.Observer)
	res.Fill.Indexed += again.Indexed
	if err != nil {
		return res, err
	}
	if err := checkFilled(ctx, d, rec); err != nil {
		return res, err
	}
	old, _ := rec.Columns()
	if res.Cleared, err = clearColumn(ctx, d, rec.Table, old); err != nil {
		return res, err
	}
	res.Index, err = lg.ChangeIndex(ctx, kr, rec, func(c *ledger.IndexColumn) error {
		if err := advance(c, res.To, ledger.RekeyFilled, ""); err != nil {
			return err
		}
		c.Slot, c.Epoch, c.Rekey = 1-c.Slot, c.Rekey.Epoch, nil
		return nil
	})
	return res, err
}

// rekeyTarget reads the index's record, the sealed column it indexes and
// its normaliser.
func rekeyTarget(ctx context.Context, kr *keyring.Keyring, d Database, table, column, name string, opts ReindexOptions) (ledger.IndexColumn, *field.Column, field.Normalizer, error) {
	var rec ledger.IndexColumn
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil {
		return rec, nil, field.Normalizer{}, err
	}
	if st == nil {
		return rec, nil, field.Normalizer{}, fmt.Errorf("lifecycle: %s has no ledger", d.Name)
	}
	if name == "" {
		name = column
	}
	i := slices.IndexFunc(st.Indexes, func(x ledger.IndexColumn) bool { return x.Table == table && x.Column == column && x.Name == name })
	if i < 0 {
		return rec, nil, field.Normalizer{}, fmt.Errorf("lifecycle: the ledger records no blind index %s of %s.%s", name, table, column)
	}
	rec = st.Indexes[i]
	if rec.Spare == "" {
		return rec, nil, field.Normalizer{}, fmt.Errorf("lifecycle: blind index %s of %s.%s has no spare column to re-key into: add one (a column like %s, with the same unique index if any) and give it to ledger.Ledger.Indexer", name, table, column, rec.Index)
	}
	norm := opts.Normalizer
	if norm.Func == nil {
		if norm, err = field.ParseNormalizer(rec.Normalizer, rec.NormalizerVersion); err != nil {
			return rec, nil, norm, fmt.Errorf("lifecycle: blind index %s of %s.%s: %w (ReindexOptions.Normalizer)", name, table, column, err)
		}
	} else if norm.Name != rec.Normalizer || norm.Version != rec.NormalizerVersion {
		return rec, nil, norm, fmt.Errorf("lifecycle: blind index %s of %s.%s is recorded with normaliser %s v%d, not %s v%d", name, table, column, rec.Normalizer, rec.NormalizerVersion, norm.Name, norm.Version)
	}
	j := slices.IndexFunc(st.Columns, func(c ledger.Column) bool { return c.Table == table && c.Column == column })
	if j < 0 {
		return rec, nil, norm, fmt.Errorf("lifecycle: the ledger does not record the sealed column %s.%s the index is computed from (ledger.Ledger.RecordColumns)", table, column)
	}
	col, err := OpenColumn(ctx, kr, d, st.Columns[j])
	return rec, col, norm, err
}

// startRekey empties the spare column (nothing writes it between
// re-keys; a value a database writer put there would keep its row from
// being filled) and records the re-key's first phase under the current
// epoch.
func startRekey(ctx context.Context, kr *keyring.Keyring, d Database, rec ledger.IndexColumn) (ledger.IndexColumn, error) {
	_, spare := rec.Columns()
	if _, err := clearColumn(ctx, d, rec.Table, spare); err != nil {
		return rec, err
	}
	epoch := kr.Primary().ID
	return d.ledger().ChangeIndex(ctx, kr, rec, func(c *ledger.IndexColumn) error {
		if c.Rekey == nil {
			c.Rekey = &ledger.IndexRekey{Epoch: epoch, Phase: ledger.RekeyBoth}
		}
		return nil
	})
}

// advance moves a recorded re-key from one phase to the next ("" at its
// end), refusing a record another run changed meanwhile.
func advance(c *ledger.IndexColumn, epoch keyring.KeyID, from, to string) error {
	if c.Rekey == nil || c.Rekey.Epoch != epoch || c.Rekey.Phase != from {
		return fmt.Errorf("lifecycle: blind index %s of %s.%s changed while it was re-keyed (another run?): run the re-key again", c.Name, c.Table, c.Column)
	}
	c.Rekey.Phase = cmp.Or(to, from)
	return nil
}

// ackOf is the wait's condition: the process declared the phase.
func ackOf(rec ledger.IndexColumn, phase string) func(fleet.Process) bool {
	form := ledger.IndexAck(rec, phase)
	return func(p fleet.Process) bool { return p.Can(form) }
}

// fillIndex gives every row its index under the re-key's epoch in the
// spare column: a reseal.Job, which fills rows whose index is NULL there
// (and re-seals stale values, with their index, on the way).
func fillIndex(ctx context.Context, kr *keyring.Keyring, d Database, rec ledger.IndexColumn, col *field.Column, norm field.Normalizer, obs Observer) (reseal.Stats, error) {
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil {
		return reseal.Stats{}, err
	}
	next, err := rec.Compute(kr, st.Database, norm, rec.Rekey.Epoch)
	if err != nil {
		return reseal.Stats{}, err
	}
	j := slices.IndexFunc(st.Columns, func(c ledger.Column) bool { return c.Table == rec.Table && c.Column == rec.Column })
	_, spare := rec.Columns()
	stats, err := (&reseal.Job{DB: d.DB, Dialect: d.Dialect, Column: col, Key: st.Columns[j].Key, Index: next, IndexColumn: spare}).Run(ctx)
	if obs.Column != nil {
		obs.Column(ColumnResult{DB: d.Name, Column: st.Columns[j], Stats: stats}, err)
	}
	if err != nil {
		return stats, fmt.Errorf("lifecycle: filling blind index %s of %s.%s: %w", rec.Name, rec.Table, rec.Column, err)
	}
	if n := stats.Failed + stats.UserHeld; n > 0 {
		return stats, fmt.Errorf("%w: %d of %s.%s (%d did not open, %d are users' own): they keep the old index until they can be filled", ErrReindexIncomplete, n, rec.Table, rec.Column, stats.Failed, stats.UserHeld)
	}
	return stats, nil
}

// clearColumn sets a slot's values to NULL, in one statement, and counts
// them.
func clearColumn(ctx context.Context, d Database, table, column string) (int64, error) {
	c := quoted(d, column)
	res, err := d.DB.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET %s = NULL WHERE %s IS NOT NULL`, quoted(d, table), c, c))
	if err != nil {
		return 0, fmt.Errorf("lifecycle: clearing %s.%s: %w", table, column, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// checkFilled refuses a switch while a row with a value has no index in
// the new column.
func checkFilled(ctx context.Context, d Database, rec ledger.IndexColumn) error {
	_, spare := rec.Columns()
	var n int64
	q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s IS NOT NULL AND %s IS NULL`, quoted(d, rec.Table), quoted(d, rec.Column), quoted(d, spare))
	if err := d.DB.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return fmt.Errorf("lifecycle: checking blind index %s of %s.%s: %w", rec.Name, rec.Table, rec.Column, err)
	}
	if n > 0 {
		return fmt.Errorf("%w: %d rows of %s.%s have a value and no index in %s", ErrReindexIncomplete, n, rec.Table, rec.Column, spare)
	}
	return nil
}

// quoted quotes an identifier the ledger recorded (checked when recorded).
func quoted(d Database, name string) string {
	q, _ := d.Dialect.Quote(name)
	return q
}
