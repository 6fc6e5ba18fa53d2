package field

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/wardlab/ward/keyring"
)

// Dialect is the SQL flavour of a database: how placeholders are written.
// The zero value is invalid.
type Dialect uint8

const (
	// DialectUnknown is the invalid zero value.
	DialectUnknown Dialect = iota
	// SQLite uses ? placeholders.
	SQLite
	// Postgres uses $1, $2, … placeholders.
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "unknown"
}

// Placeholder returns the n-th (1-based) bind parameter.
func (d Dialect) Placeholder(n int) string {
	if d == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Rebind rewrites the ? placeholders of a query for the dialect ($1, $2, …
// for PostgreSQL). It does not parse SQL: queries must not contain ? in
// literals.
func (d Dialect) Rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString(d.Placeholder(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// quoteIdent validates and quotes a (possibly schema-qualified) identifier.
func quoteIdent(s string) (string, error) {
	if !identRE.MatchString(s) {
		return "", fmt.Errorf("field: invalid SQL identifier %q", s)
	}
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, '"', '.', '"')
			continue
		}
		out = append(out, s[i])
	}
	return string(append(out, '"')), nil
}

// Reencrypt moves every value of a column to the keyring's primary key:
// the job to run after a rotation, before the old key is disabled.
//
// It walks the table in primary-key order in batches. Values already under
// the primary key are skipped without decryption, so the job is idempotent
// and resumable: after a crash or kill, run it again and it continues where
// values are still under old keys. Each batch is one transaction, and each
// row is updated only if it still holds the exact ciphertext that was read
// (compare-and-swap), so a concurrent writer's newer value is never
// overwritten. Every new ciphertext is opened again before it is written,
// so no row is ever left unreadable.
type Reencrypt struct {
	// DB is the database holding the column.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect Dialect
	// Column is the encrypted column; its table and name are used in SQL.
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
	Reencrypted int // rows rewritten under the primary key
	Total       int // rows in the table when the pass started
}

// Stats summarises a finished Reencrypt.
type Stats struct {
	Scanned     int // rows read
	Reencrypted int // rows rewritten under the primary key
	Current     int // rows already under the primary key
	Null        int // NULL values (left alone)
	Conflicts   int // rows changed by another writer while in flight
	Failed      int // rows that did not open; left unchanged
	Passes      int // passes over the table
	// FirstFailure describes the first row that did not open.
	FirstFailure error
}

// Census counts the values of a column per key ID, for a dry run.
type Census struct {
	Rows      int
	Null      int
	Malformed int
	PerKey    map[keyring.KeyID]int
}

// ErrUnreadableRows is returned by Run when some rows could not be opened
// (unknown or disabled key, tampering); they are left unchanged and
// counted in Stats.Failed.
var ErrUnreadableRows = errors.New("field: some rows could not be opened and were left unchanged")

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
	p := r.Dialect.Placeholder
	return queries{
		count:  fmt.Sprintf("SELECT COUNT(*) FROM %s", t),
		first:  fmt.Sprintf("SELECT %s, %s FROM %s ORDER BY %s LIMIT %s", k, c, t, k, p(1)),
		next:   fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s > %s ORDER BY %s LIMIT %s", k, c, t, k, p(1), k, p(2)),
		update: fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = %s AND %s = %s", t, c, p(1), k, p(2), c, p(3)),
	}, nil
}

type dbRow struct {
	key any
	val any // as scanned: nil, []byte or string
}

// scan calls fn for every batch of rows in key order.
func (r *Reencrypt) scan(ctx context.Context, q queries, fn func([]dbRow) error) error {
	batch := r.BatchSize
	if batch <= 0 {
		batch = 500
	}
	var last any
	for {
		var rows *sql.Rows
		var err error
		if last == nil {
			rows, err = r.DB.QueryContext(ctx, q.first, batch)
		} else {
			rows, err = r.DB.QueryContext(ctx, q.next, last, batch)
		}
		if err != nil {
			return fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
		}
		var got []dbRow
		for rows.Next() {
			var d dbRow
			if err := rows.Scan(&d.key, &d.val); err != nil {
				rows.Close()
				return fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
			}
			if b, ok := d.key.([]byte); ok {
				d.key = string(b)
			}
			if b, ok := d.val.([]byte); ok {
				d.val = append([]byte(nil), b...)
			}
			got = append(got, d)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("field: reading %s: %w", r.Column.Table(), err)
		}
		if len(got) == 0 {
			return nil
		}
		if err := fn(got); err != nil {
			return err
		}
		if len(got) < batch {
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

// Count is the dry run: it reads the column and counts values per key ID
// without decrypting or writing anything.
func (r *Reencrypt) Count(ctx context.Context) (Census, error) {
	q, err := r.queries()
	if err != nil {
		return Census{}, err
	}
	c := Census{PerKey: map[keyring.KeyID]int{}}
	err = r.scan(ctx, q, func(rows []dbRow) error {
		for _, row := range rows {
			c.Rows++
			var ct Ciphertext
			if row.val == nil {
				c.Null++
				continue
			}
			if err := ct.Scan(row.val); err != nil {
				c.Malformed++
				continue
			}
			h, err := ct.Header()
			if err != nil {
				c.Malformed++
				continue
			}
			c.PerKey[h.KeyID]++
		}
		return nil
	})
	return c, err
}

// maxPasses bounds how often Run walks the table again to pick up rows
// that concurrent writers changed under an old key.
const maxPasses = 3

// Run re-encrypts every value not under the primary key. It returns
// [ErrUnreadableRows] (with Stats) if some values could not be opened.
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

func (r *Reencrypt) pass(ctx context.Context, q queries, st *Stats) error {
	var total int
	if err := r.DB.QueryRowContext(ctx, q.count).Scan(&total); err != nil {
		return fmt.Errorf("field: counting %s: %w", r.Column.Table(), err)
	}
	prog := Progress{Total: total}
	type update struct{ key, old, new any }
	return r.scan(ctx, q, func(rows []dbRow) error {
		primary := r.Column.Keyring().Primary().ID
		var ups []update
		for _, row := range rows {
			st.Scanned++
			prog.Scanned++
			if row.val == nil {
				st.Null++
				continue
			}
			rk, err := rowFromDB(row.key)
			if err != nil {
				return err
			}
			var ct Ciphertext
			if err := ct.Scan(row.val); err != nil {
				r.fail(st, &OpenError{Table: r.Column.Table(), Column: r.Column.Name(), Row: rk.String(), Err: err})
				continue
			}
			if h, err := ct.Header(); err == nil && h.KeyID == primary {
				st.Current++
				continue
			}
			pt, err := r.Column.Open(rk, ct)
			if err != nil {
				r.fail(st, err)
				continue
			}
			fresh, err := r.Column.Seal(rk, pt)
			if err != nil {
				clear(pt)
				return err
			}
			// Never write what cannot be read back.
			check, err := r.Column.Open(rk, fresh)
			if err != nil || string(check) != string(pt) {
				clear(pt)
				return fmt.Errorf("field: internal error: re-sealed value for row %s does not open: %v", rk, err)
			}
			clear(pt)
			clear(check)
			nv, _ := fresh.Value()
			ups = append(ups, update{row.key, row.val, nv})
		}
		if len(ups) > 0 {
			tx, err := r.DB.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("field: begin: %w", err)
			}
			done := 0
			for _, u := range ups {
				res, err := tx.ExecContext(ctx, q.update, u.new, u.key, u.old)
				if err != nil {
					tx.Rollback()
					return fmt.Errorf("field: updating %s: %w", r.Column.Table(), err)
				}
				if n, _ := res.RowsAffected(); n == 1 {
					done++
				} else {
					st.Conflicts++
				}
			}
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("field: commit: %w", err)
			}
			st.Reencrypted += done
			prog.Reencrypted += done
		}
		if r.Progress != nil {
			r.Progress(prog)
		}
		return nil
	})
}

func (r *Reencrypt) fail(st *Stats, err error) {
	st.Failed++
	if st.FirstFailure == nil {
		st.FirstFailure = err
	}
}
