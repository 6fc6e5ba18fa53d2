package reseal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/observe"
	"golang.org/x/time/rate"
)

// Job brings every value of a column up to date: under the keyring's
// primary key, in the current ciphertext version, and bound under the
// column's current binding ([field.Bind]). It is the job to run after a
// rotation (before the old key is disabled), after declaring bound columns
// (with [field.AcceptLegacyBinding] on), to leave ciphertext v1 behind, and,
// with FromPlaintext, to encrypt a column that held plaintext (with
// [field.AcceptPlaintext] on in the application meanwhile).
//
// It walks the table in primary-key order in batches. Values already up to
// date are recognised from their header and context check without
// decryption, so the job is idempotent and resumable: after a crash or
// kill, run it again and it continues where values are still stale. Each
// batch is one transaction, and each row is updated only if it still holds
// the exact value that was read (compare-and-swap), so a concurrent
// writer's newer value is never overwritten. Every new ciphertext is
// opened again before it is written, so no row is ever left unreadable.
//
// One job at a time works on a column (or a shard of it): Run holds a
// lease in LockTable and returns [ErrJobRunning] while another job holds
// it. Workers run batches in parallel in one process; Shard and Shards split
// the table between processes or machines (key ranges for integer keys,
// hash buckets for text keys), each crash-safe on its own, with the
// database as the only coordinator. Rate caps rows per second so that live
// traffic keeps its latency.
type Job struct {
	// DB is the database holding the column.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect field.Dialect
	// Column is the encrypted column; its table, name and bound columns
	// are used in SQL.
	Column *field.Column
	// Key names the table's primary-key column (integer or text).
	Key string
	// BatchSize is the number of rows read and updated per transaction
	// (default 500).
	BatchSize int
	// Pause is slept between batches to limit load on a busy database
	// (default 0).
	Pause time.Duration
	// FromPlaintext encrypts values that do not parse as ward ciphertexts
	// (plaintext written before the column was encrypted). Values that
	// parse must open, as always; they are never taken for plaintext.
	FromPlaintext bool
	// Workers is the number of batches processed at once (default 1).
	Workers int
	// Shard and Shards give this job's share of the table: shard i of n
	// (0 <= i < n; n 0 or 1 means the whole table).
	Shard, Shards int
	// Rate limits the rows rewritten per second (0: no limit); rows
	// already up to date pass at full speed.
	Rate float64
	// Progress, if set, is called after every batch (never concurrently).
	Progress func(Progress)
	// Index and IndexColumn, when set, keep a blind-index column of the
	// table in step with the value: every row the job writes gets the
	// index of its plaintext in the same compare-and-swap UPDATE, and a
	// row whose value is current but whose index is NULL is opened and
	// given its index (a backfill).
	Index       *field.BlindIndex
	IndexColumn string
	// Subject, when set, restricts the job to the rows of one subject of a
	// column sealed per subject (its subject column equal to Subject): a
	// private user's values, moved with their keys while they are logged
	// in (Column.WithKeys). It cannot be combined with shards.
	Subject string

	lease *jobLock // held while Run runs (LockTable)
}

// Progress reports a running Job.
type Progress struct {
	Scanned  int // rows read so far in this pass
	Resealed int // rows rewritten
	Total    int // rows in the table when the pass started
}

// Stats summarises a finished Job.
type Stats struct {
	Scanned   int // rows read
	Resealed  int // rows rewritten (encrypted, re-sealed or re-bound)
	Plaintext int // of which were plaintext (FromPlaintext)
	Current   int // rows already up to date
	Null      int // NULL values (left alone)
	Conflicts int // rows changed by another writer while in flight
	Failed    int // rows that did not open (in the last pass); left unchanged
	Indexed   int // rows written only to fill in their blind index (Index)
	Passes    int // passes over the table
	// UserHeld counts rows of subjects whose keys only their users hold
	// (field/subject private mode): skipped, left as they are; the
	// application seals them at the user's next log-in.
	UserHeld int
	// Erased counts rows of forgotten subjects still in an older form:
	// skipped (they can no longer be sealed for their subject). Delete
	// them: a value under a keyring key is not erased by a forget.
	Erased int
	// FirstFailure describes the first row that did not open.
	FirstFailure error
}

// ErrUnreadableRows is returned by Run when some rows could not be opened
// (unknown or disabled key, tampering, a value that looks like a
// ciphertext but is not); they are left unchanged and counted in
// Stats.Failed.
var ErrUnreadableRows = errors.New("reseal: some rows could not be opened and were left unchanged")

// ErrNotStrict means the job's MySQL or MariaDB server, or its session,
// has no strict sql_mode: a value too long for its column would be cut
// short there instead of refused. The error names the setting.
var ErrNotStrict = sqltable.ErrNotStrict

// maxPasses bounds how often Run walks the table again to pick up rows
// that concurrent writers changed under an old key.
const maxPasses = 3

// Run brings every stale value up to date. It returns [ErrUnreadableRows]
// (with Stats) if some values could not be opened or would not fit their
// column ([ErrTooLong]), and refuses, before anything, a MySQL or MariaDB
// server or session whose sql_mode is not strict (sqltable.ErrNotStrict,
// exported as [ErrNotStrict]) and a migration that would leave a unique
// column unenforced ([ErrUniquenessLost], [Job.CheckUnique]).
func (r *Job) Run(ctx context.Context) (Stats, error) {
	q, err := r.queries(ctx)
	if err != nil {
		return Stats{}, err
	}
	if err := sqltable.RequireStrict(ctx, r.DB, r.Dialect.String()); err != nil {
		return Stats{}, fmt.Errorf("reseal: %w", err)
	}
	if err := r.CheckUnique(ctx); err != nil {
		return Stats{}, err
	}
	lock, err := r.lock(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer lock.release()
	r.lease = lock
	var st Stats
	for st.Passes < maxPasses {
		st.Passes++
		st.Failed, st.FirstFailure = 0, nil // a row that fails, fails again in every pass
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

// pass walks the table (this shard) once: one goroutine reads batches in
// key order, Workers goroutines re-seal and write them.
func (r *Job) pass(ctx context.Context, q queries, st *Stats) error {
	var total int
	if err := r.DB.QueryRowContext(ctx, q.count, q.countArgs...).Scan(&total); err != nil {
		return fmt.Errorf("reseal: counting %s: %w", r.Column.Table(), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	var (
		mu      sync.Mutex
		prog    = Progress{Total: total}
		first   error
		wg      sync.WaitGroup
		batches = make(chan []dbRow)
	)
	var limit *rate.Limiter
	if r.Rate > 0 {
		limit = rate.NewLimiter(rate.Limit(r.Rate), r.batchSize()) // one batch at a time: no burst
	}
	for range max(1, r.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rows := range batches {
				var local Stats
				done, err := r.batch(ctx, q, rows, &local, limit)
				mu.Lock()
				st.merge(local)
				prog.Scanned += len(rows)
				prog.Resealed += done
				if err != nil && first == nil {
					first = err
					cancel()
				}
				if r.Progress != nil && err == nil {
					r.Progress(prog)
				}
				if o := observe.Get(); o != nil && err == nil {
					o.Job(observe.JobBatch{Table: r.Column.Table(), Column: r.Column.Name(), Rows: done, Done: prog.Resealed, Total: total, Elapsed: time.Since(began)})
				}
				mu.Unlock()
			}
		}()
	}
	err := r.scan(ctx, q, func(rows []dbRow) error {
		select {
		case batches <- rows:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(batches)
	wg.Wait()
	if first != nil {
		return first
	}
	return err
}

// batch re-seals and writes one batch, and renews the job's lock. The rate limit counts the rows
// rewritten, not the rows read: a resumed job skims what is already done
// at full speed.
func (r *Job) batch(ctx context.Context, q queries, rows []dbRow, st *Stats, limit *rate.Limiter) (int, error) {
	if r.lease != nil {
		if err := r.lease.renew(ctx); err != nil {
			return 0, err
		}
	}
	ups, err := r.reseal(rows, st)
	if err != nil {
		return 0, err
	}
	ups = r.fitting(q, ups, st)
	if limit != nil && len(ups) > 0 {
		if err := limit.WaitN(ctx, len(ups)); err != nil {
			return 0, err
		}
	}
	return r.apply(ctx, q, ups, st)
}

// merge adds another worker's counts.
func (s *Stats) merge(o Stats) {
	s.Scanned += o.Scanned
	s.Resealed += o.Resealed
	s.Plaintext += o.Plaintext
	s.Current += o.Current
	s.Null += o.Null
	s.Conflicts += o.Conflicts
	s.Failed += o.Failed
	s.Indexed += o.Indexed
	s.UserHeld += o.UserHeld
	s.Erased += o.Erased
	if s.FirstFailure == nil {
		s.FirstFailure = o.FirstFailure
	}
}

// reseal computes the new value of every stale row of a batch.
func (r *Job) reseal(rows []dbRow, st *Stats) ([]update, error) {
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
		if state == stateIndex {
			st.Indexed++
		}
		if state == stateNewer { // written by a newer release: this one neither opens nor re-seals it
			r.fail(st, &field.OpenError{Table: r.Column.Table(), Column: r.Column.Name(), Row: fmt.Sprint(row.key), Err: ct.Err()})
			continue
		}
		rk, err := row.rowKey()
		if err != nil {
			r.fail(st, &field.OpenError{Table: r.Column.Table(), Column: r.Column.Name(), Row: fmt.Sprint(row.key), Err: err})
			continue
		}
		if state == stateDamaged { // damage is never data: left as it is, counted as failed
			_, err := r.Column.Open(rk, ct) // field.ErrDamaged, naming the row
			r.fail(st, err)
			continue
		}
		var nv any
		var idx []byte
		if state == statePlain {
			nv, idx, err = r.encryptPlain(rk, row.val, ct)
		} else {
			nv, idx, err = r.resealOne(rk, ct)
		}
		if errors.Is(err, errInternal) {
			return nil, err
		}
		if errors.Is(err, field.ErrSubjectLocked) {
			st.UserHeld++
			continue
		}
		if errors.Is(err, field.ErrSubjectErased) || errors.Is(err, field.ErrSubjectKeyLost) {
			st.Erased++
			continue
		}
		if err != nil {
			r.fail(st, err)
			continue
		}
		ups = append(ups, update{key: row.key, old: row.val, new: nv, idx: idx, plain: state == statePlain})
	}
	return ups, nil
}

// encryptPlain seals a stored plaintext (FromPlaintext); without it, a
// value that is not a ciphertext is a failure, as before.
func (r *Job) encryptPlain(rk field.RowKey, stored any, ct field.Ciphertext) (any, []byte, error) {
	col := r.Column
	if !r.FromPlaintext {
		return nil, nil, &field.OpenError{Table: col.Table(), Column: col.Name(), Row: rk.String(), Err: ct.Err()}
	}
	var pt []byte
	switch v := stored.(type) {
	case []byte:
		pt = v
	case string:
		pt = []byte(v)
	}
	fresh, err := col.Seal(rk, pt)
	if err != nil {
		return nil, nil, sealError(err)
	}
	check, err := col.Open(rk, fresh)
	if err != nil || string(check) != string(pt) {
		return nil, nil, fmt.Errorf("%w: sealed value for row %s does not open: %v", errInternal, rk, err)
	}
	clear(check)
	if _, isText := stored.(string); isText {
		fresh = fresh.AsText() // a TEXT column gets the text form
	}
	v, err := fresh.Value()
	return v, r.indexOf(pt), err
}

// indexOf is the blind index of pt, or nil without an index column.
func (r *Job) indexOf(pt []byte) []byte {
	if r.Index == nil {
		return nil
	}
	return r.Index.Compute(string(pt))
}

var errInternal = errors.New("reseal: internal error")

// sealError classifies a failed seal: a subject whose key the job cannot
// use (user-held, erased, lost) is the row's state, anything else stops
// the job.
func sealError(err error) error {
	if errors.Is(err, field.ErrSubjectLocked) || errors.Is(err, field.ErrSubjectErased) || errors.Is(err, field.ErrSubjectKeyLost) {
		return err
	}
	return fmt.Errorf("%w: %w", errInternal, err)
}

// resealOne opens ct (accepting the v1 binding when the column declares
// bound columns: that is what re-binding is for) and seals it again.
func (r *Job) resealOne(rk field.RowKey, ct field.Ciphertext) (any, []byte, error) {
	col := r.Column
	pt, err := col.OpenRebinding(rk, ct)
	if err != nil {
		return nil, nil, err
	}
	defer clear(pt)
	fresh, err := col.Seal(rk, pt)
	if err != nil {
		return nil, nil, sealError(err)
	}
	// Never write what cannot be read back.
	check, err := col.Open(rk, fresh)
	if err != nil || string(check) != string(pt) {
		return nil, nil, fmt.Errorf("%w: re-sealed value for row %s does not open: %v", errInternal, rk, err)
	}
	clear(check)
	if ct.IsText() {
		fresh = fresh.AsText() // keep the stored form: a TEXT column stays text
	}
	v, err := fresh.Value()
	return v, r.indexOf(pt), err
}

// apply writes a batch of updates in one transaction, each only if the
// row still holds the value read.
func (r *Job) apply(ctx context.Context, q queries, ups []update, st *Stats) (int, error) {
	if len(ups) == 0 {
		return 0, nil
	}
	tx, err := r.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("reseal: begin: %w", err)
	}
	done, total, counted := 0, len(ups), 0
	// A deadlock, or on Galera a lost certification against the
	// application's write on another node (MySQL's 1213), rolls the batch
	// back: its rows count as conflicts, and the next pass reads them again.
	lost := func() (int, error) {
		tx.Rollback()
		st.Conflicts += total - counted // the batch's every row: none stays
		return 0, nil
	}
	for len(ups) > 0 {
		stmt, args, used := q.casUpdate(ups)
		chunk := ups[:used]
		ups = ups[used:]
		res, err := tx.ExecContext(ctx, stmt, args...)
		if sqltable.Conflict(err) {
			return lost()
		}
		if err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("reseal: updating %s: %w", r.Column.Table(), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("reseal: updating %s: %w", r.Column.Table(), err)
		}
		done += int(n)
		st.Conflicts += len(chunk) - int(n)
		counted += len(chunk) - int(n)
	}
	if err := sqltable.Commit(ctx, tx); sqltable.Conflict(err) {
		return lost()
	} else if err != nil {
		return 0, fmt.Errorf("reseal: commit: %w", err)
	}
	st.Resealed += done
	return done, nil
}

// ErrTooLong means a sealed value would not fit its column's declared
// width (a VARCHAR(255) holding an e-mail address of 192 characters): the
// job leaves the row as it is and counts it as failed, before any write,
// rather than let the database refuse the batch (or, with a non-strict
// MySQL sql_mode, cut the ciphertext short). Widen the column (the dry
// run's census says to what) and run the job again.
var ErrTooLong = errors.New("reseal: the sealed value does not fit its column")

// TooLongError names the row, the size its sealed value needs and the
// column's width.
type TooLongError struct {
	Table, Column, Row string
	Need, Width        int64
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("%v: %s.%s row %s needs %d, the column holds %d (widen it to at least the census's longest)", ErrTooLong, e.Table, e.Column, e.Row, e.Need, e.Width)
}

// Is reports whether target is ErrTooLong.
func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }

// fitting keeps the updates whose new value fits the column's declared
// width (any, when it declares none), counting the plaintext ones, and
// fails the others: nothing is written that the database would refuse or
// cut short.
func (r *Job) fitting(q queries, ups []update, st *Stats) []update {
	kept := ups[:0]
	for _, u := range ups {
		if n := valueSize(u.new); q.width > 0 && n > q.width {
			r.fail(st, &TooLongError{Table: r.Column.Table(), Column: r.Column.Name(), Row: fmt.Sprint(u.key), Need: n, Width: q.width})
			continue
		}
		if u.plain {
			st.Plaintext++
		}
		kept = append(kept, u)
	}
	return kept
}

// valueSize is the size of a value about to be written: characters of a
// text form (ASCII), bytes of a binary one.
func valueSize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case []byte:
		return int64(len(v))
	}
	return 0
}

func (r *Job) fail(st *Stats, err error) {
	st.Failed++
	if st.FirstFailure == nil {
		st.FirstFailure = err
	}
}
