package field

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardlab/ward/keyring"
)

// Reencrypt brings every value of a column up to date: under the keyring's
// primary key, in the current ciphertext version, and bound under the
// column's current binding ([Bind]). It is the job to run after a
// rotation (before the old key is disabled), after declaring bound columns
// (with [AcceptLegacyBinding] on), and to leave ciphertext v1 behind.
//
// It walks the table in primary-key order in batches. Values already up to
// date are recognised from their header and context check without
// decryption, so the job is idempotent and resumable: after a crash or
// kill, run it again and it continues where values are still stale. Each
// batch is one transaction, and each row is updated only if it still holds
// the exact value that was read (compare-and-swap), so a concurrent
// writer's newer value is never overwritten. Every new ciphertext is
// opened again before it is written, so no row is ever left unreadable.
type Reencrypt struct {
	// DB is the database holding the column.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect Dialect
	// Column is the encrypted column; its table, name and bound columns
	// are used in SQL.
	Column *Column
	// Key names the table's primary-key column (integer or text).
	Key string
	// BatchSize is the number of rows read and updated per transaction
	// (default 500).
	BatchSize int
	// Pause is slept between batches to limit load on a busy database
	// (default 0).
	Pause time.Duration
	// Progress, if set, is called after every batch.
	Progress func(Progress)
}

// Progress reports a running Reencrypt.
type Progress struct {
	Scanned     int // rows read so far in this pass
	Reencrypted int // rows rewritten
	Total       int // rows in the table when the pass started
}

// Stats summarises a finished Reencrypt.
type Stats struct {
	Scanned     int // rows read
	Reencrypted int // rows rewritten
	Current     int // rows already up to date
	Null        int // NULL values (left alone)
	Conflicts   int // rows changed by another writer while in flight
	Failed      int // rows that did not open; left unchanged
	Passes      int // passes over the table
	// FirstFailure describes the first row that did not open.
	FirstFailure error
}

// Census counts the values of a column, for a dry run: per key ID, per
// ciphertext version, and how many are still bound under the v1 context.
type Census struct {
	Rows      int
	Null      int
	Malformed int // values that are not ward ciphertexts
	PerKey    map[keyring.KeyID]int
	// PerVersion counts values per ciphertext format version.
	PerVersion map[uint8]int
	// LegacyBinding counts values whose context check matches the v1
	// context rather than the column's bound columns (a column with
	// Bind), or matches neither (Unbound). Only keys the keyring holds
	// can be checked.
	LegacyBinding, Unbound int
	// Current counts values that need no work: under the primary key, in
	// the current version and binding.
	Current int
}

// ErrUnreadableRows is returned by Run when some rows could not be opened
// (unknown or disabled key, tampering); they are left unchanged and
// counted in Stats.Failed.
var ErrUnreadableRows = errors.New("field: some rows could not be opened and were left unchanged")

// queries are the statements of a job over one table.
type queries struct {
	count, first, next, update string
}

func (r *Reencrypt) queries() (queries, error) {
	if r.DB == nil || r.Column == nil {
		return queries{}, errors.New("field: Reencrypt needs DB and Column")
	}
	if r.Dialect != SQLite && r.Dialect != Postgres {
		return queries{}, errors.New("field: Reencrypt needs a Dialect")
	}
	t, err := quoteIdent(r.Column.Table())
	if err != nil {
		return queries{}, err
	}
	c, err := quoteIdent(r.Column.Name())
	if err != nil {
		return queries{}, err
	}
	k, err := quoteIdent(r.Key)
	if err != nil {
		return queries{}, err
	}
	cols := k + ", " + c
	for _, b := range r.Column.Bound() {
		qb, err := quoteIdent(b)
		if err != nil {
			return queries{}, err
		}
		cols += ", " + qb
	}
	p := r.Dialect.Placeholder
	return queries{
		count:  fmt.Sprintf("SELECT COUNT(*) FROM %s", t),
		first:  fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT %s", cols, t, k, p(1)),
		next:   fmt.Sprintf("SELECT %s FROM %s WHERE %s > %s ORDER BY %s LIMIT %s", cols, t, k, p(1), k, p(2)),
		update: fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = %s AND %s = %s", t, c, p(1), k, p(2), c, p(3)),
	}, nil
}

// dbRow is one row as read: primary key, value and bound values.
type dbRow struct {
	key   any
	val   any // as scanned: nil, []byte or string
	bound []any
}

// rowKey returns the row's key with its bound values.
func (d dbRow) rowKey() (RowKey, error) {
	rk, err := rowFromDB(d.key)
	if err != nil {
		return rk, err
	}
	if len(d.bound) > 0 {
		rk = rk.With(d.bound...)
	}
	return rk, rk.err
}

func (r *Reencrypt) batchSize() int {
	if r.BatchSize <= 0 {
		return 500
	}
	return r.BatchSize
}

// readBatch reads up to the batch size of rows after last (nil: from the
// start) in key order.
func (r *Reencrypt) readBatch(ctx context.Context, q queries, last any) ([]dbRow, error) {
	var rows *sql.Rows
	var err error
	if last == nil {
		rows, err = r.DB.QueryContext(ctx, q.first, r.batchSize())
	} else {
		rows, err = r.DB.QueryContext(ctx, q.next, last, r.batchSize())
	}
	if err != nil {
		return nil, fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
	}
	defer rows.Close()
	var got []dbRow
	nb := len(r.Column.Bound())
	for rows.Next() {
		d := dbRow{bound: make([]any, nb)}
		dest := []any{&d.key, &d.val}
		for i := range d.bound {
			dest = append(dest, &d.bound[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
		}
		if b, ok := d.key.([]byte); ok {
			d.key = string(b)
		}
		if b, ok := d.val.([]byte); ok {
			d.val = append([]byte(nil), b...)
		}
		got = append(got, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
	}
	return got, nil
}

// scan calls fn for every batch of rows in key order.
func (r *Reencrypt) scan(ctx context.Context, q queries, fn func([]dbRow) error) error {
	var last any
	for {
		got, err := r.readBatch(ctx, q, last)
		if err != nil || len(got) == 0 {
			return err
		}
		if err := fn(got); err != nil {
			return err
		}
		if len(got) < r.batchSize() {
			return nil
		}
		last = got[len(got)-1].key
		if r.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(r.Pause):
			}
		}
	}
}

// valueState says what a stored value needs.
type valueState int

const (
	stateNull      valueState = iota
	stateCurrent              // up to date
	stateStale                // to re-seal: old key, version or binding
	stateMalformed            // not a ward ciphertext
)

// classify looks at a stored value without decrypting it.
func (r *Reencrypt) classify(row dbRow, primary keyring.KeyID) (valueState, Ciphertext, keyring.Header) {
	if row.val == nil {
		return stateNull, Ciphertext{}, keyring.Header{}
	}
	var ct Ciphertext
	if err := ct.Scan(row.val); err != nil {
		return stateMalformed, ct, keyring.Header{}
	}
	h, err := ct.Header()
	if err != nil {
		return stateMalformed, ct, h
	}
	if h.KeyID != primary || h.Version != keyring.CurrentVersion {
		return stateStale, ct, h
	}
	if r.Column.Bound() != nil && !r.boundCurrently(row, ct) {
		return stateStale, ct, h
	}
	return stateCurrent, ct, h
}

// boundCurrently reports whether the value's context check matches the
// column's current binding.
func (r *Reencrypt) boundCurrently(row dbRow, ct Ciphertext) bool {
	rk, err := row.rowKey()
	if err != nil {
		return false
	}
	ctx, err := r.Column.Context(rk)
	if err != nil {
		return false
	}
	ok, err := r.Column.Keyring().ContextMatches(ct.Bytes(), ctx)
	return err == nil && ok
}

// Count is the dry run: it reads the column and counts values per key ID,
// version and binding without decrypting or writing anything.
func (r *Reencrypt) Count(ctx context.Context) (Census, error) {
	q, err := r.queries()
	if err != nil {
		return Census{}, err
	}
	c := Census{PerKey: map[keyring.KeyID]int{}, PerVersion: map[uint8]int{}}
	primary := r.Column.Keyring().Primary().ID
	err = r.scan(ctx, q, func(rows []dbRow) error {
		for _, row := range rows {
			c.Rows++
			st, ct, h := r.classify(row, primary)
			switch st {
			case stateNull:
				c.Null++
				continue
			case stateMalformed:
				c.Malformed++
				continue
			case stateCurrent:
				c.Current++
			}
			c.PerKey[h.KeyID]++
			c.PerVersion[h.Version]++
			r.countBinding(&c, row, ct, h)
		}
		return nil
	})
	return c, err
}

func (r *Reencrypt) countBinding(c *Census, row dbRow, ct Ciphertext, h keyring.Header) {
	if r.Column.Bound() == nil {
		return
	}
	if _, ok := r.Column.Keyring().Lookup(h.KeyID); !ok {
		return
	}
	if r.boundCurrently(row, ct) {
		return
	}
	rk, err := row.rowKey()
	if err != nil {
		c.Unbound++
		return
	}
	var buf [128]byte
	if ok, _ := r.Column.Keyring().ContextMatches(ct.Bytes(), r.Column.legacyContext(buf[:], rk)); ok {
		c.LegacyBinding++
	} else {
		c.Unbound++
	}
}

// maxPasses bounds how often Run walks the table again to pick up rows
// that concurrent writers changed under an old key.
const maxPasses = 3

// Run brings every stale value up to date. It returns [ErrUnreadableRows]
// (with Stats) if some values could not be opened.
func (r *Reencrypt) Run(ctx context.Context) (Stats, error) {
	q, err := r.queries()
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	for st.Passes < maxPasses {
		st.Passes++
		before := st.Conflicts
		if err := r.pass(ctx, q, &st); err != nil {
			return st, err
		}
		if st.Conflicts == before {
			break
		}
	}
	if st.Failed > 0 {
		return st, fmt.Errorf("%w: %d rows, first: %w", ErrUnreadableRows, st.Failed, st.FirstFailure)
	}
	return st, nil
}

// update is one compare-and-swap: the row's key, the value read, the new
// value.
type update struct{ key, old, new any }

func (r *Reencrypt) pass(ctx context.Context, q queries, st *Stats) error {
	var total int
	if err := r.DB.QueryRowContext(ctx, q.count).Scan(&total); err != nil {
		return fmt.Errorf("field: counting %s: %w", r.Column.Table(), err)
	}
	prog := Progress{Total: total}
	return r.scan(ctx, q, func(rows []dbRow) error {
		ups, err := r.reseal(rows, st)
		if err != nil {
			return err
		}
		prog.Scanned += len(rows)
		done, err := r.apply(ctx, q, ups, st)
		if err != nil {
			return err
		}
		prog.Reencrypted += done
		if r.Progress != nil {
			r.Progress(prog)
		}
		return nil
	})
}

// reseal computes the new value of every stale row of a batch.
func (r *Reencrypt) reseal(rows []dbRow, st *Stats) ([]update, error) {
	primary := r.Column.Keyring().Primary().ID
	var ups []update
	for _, row := range rows {
		st.Scanned++
		state, ct, _ := r.classify(row, primary)
		switch state {
		case stateNull:
			st.Null++
			continue
		case stateCurrent:
			st.Current++
			continue
		}
		rk, err := row.rowKey()
		if err != nil {
			r.fail(st, &OpenError{Table: r.Column.Table(), Column: r.Column.Name(), Row: fmt.Sprint(row.key), Err: err})
			continue
		}
		if state == stateMalformed {
			r.fail(st, &OpenError{Table: r.Column.Table(), Column: r.Column.Name(), Row: rk.String(), Err: keyring.ErrMalformed})
			continue
		}
		nv, err := r.resealOne(rk, ct)
		if errors.Is(err, errInternal) {
			return nil, err
		}
		if err != nil {
			r.fail(st, err)
			continue
		}
		ups = append(ups, update{row.key, row.val, nv})
	}
	return ups, nil
}

var errInternal = errors.New("field: internal error")

// resealOne opens ct (accepting the v1 binding when the column declares
// bound columns: that is what re-binding is for) and seals it again.
func (r *Reencrypt) resealOne(rk RowKey, ct Ciphertext) (any, error) {
	col := r.Column
	pt, err := col.Open(rk, ct)
	if err != nil && col.Bound() != nil && !col.legacy && errors.Is(err, keyring.ErrWrongContext) {
		var buf [128]byte
		if pt, err = col.kr.Open(ct.Bytes(), col.legacyContext(buf[:], rk)); err != nil {
			err = &OpenError{Table: col.table, Column: col.name, Row: rk.String(), Err: err}
		}
	}
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	fresh, err := col.Seal(rk, pt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInternal, err)
	}
	// Never write what cannot be read back.
	check, err := col.Open(rk, fresh)
	if err != nil || string(check) != string(pt) {
		return nil, fmt.Errorf("%w: re-sealed value for row %s does not open: %v", errInternal, rk, err)
	}
	clear(check)
	if ct.text {
		fresh.text = true // keep the stored form: a TEXT column stays text
	}
	return fresh.Value()
}

// apply writes a batch of updates in one transaction, each only if the
// row still holds the value read.
func (r *Reencrypt) apply(ctx context.Context, q queries, ups []update, st *Stats) (int, error) {
	if len(ups) == 0 {
		return 0, nil
	}
	tx, err := r.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("field: begin: %w", err)
	}
	done := 0
	for _, u := range ups {
		res, err := tx.ExecContext(ctx, q.update, u.new, u.key, u.old)
		if err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("field: updating %s: %w", r.Column.Table(), err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			done++
		} else {
			st.Conflicts++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("field: commit: %w", err)
	}
	st.Reencrypted += done
	return done, nil
}

func (r *Reencrypt) fail(st *Stats, err error) {
	st.Failed++
	if st.FirstFailure == nil {
		st.FirstFailure = err
	}
}
