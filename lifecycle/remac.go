package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// MACResult is what a re-MAC pass did to one recorded column of row MACs.
type MACResult struct {
	DB     string
	Column ledger.MACColumn
	// Scanned rows; Moved, whose MAC is now v2 under the current epoch;
	// Current, already there; Invalid, whose MAC does not verify (altered
	// or forged: left as they are); Changed, written by the application
	// between the read and the write (left to the next run).
	Scanned, Moved, Current, Invalid, Changed int
	// Refused is true once the ledger records that the table's v1 MACs
	// are refused (field.RowMACMovedMark); Why says why not.
	Refused bool
	Why     string
	// Epoch is the integrity epoch the pass moved MACs to.
	Epoch keyring.KeyID
}

// String says what the pass did, as the CLI and the chat print it.
func (m MACResult) String() string {
	state := "v1 MACs refused"
	if !m.Refused {
		state = "v1 MACs still accepted: " + m.Why
	}
	return fmt.Sprintf("%s.%s: %d row MACs moved to epoch %v, %d already there, %d invalid, %d changed meanwhile; %s",
		m.Column.Table, m.Column.Column, m.Moved, m.Epoch, m.Current, m.Invalid, m.Changed, state)
}

// macBatch is how many rows one read of a re-MAC pass takes.
const macBatch = 500

// settled is how long the form integrity:v2 must have been open before a
// pass that found no v1 MAC refuses v1: a process of this release learns
// that the form opened at its next heartbeat (every 2 s by default) and
// writes v2 from then on. A process whose heartbeat is slower could write
// a v1 MAC after the refusal: that row then fails to verify (a session
// signs in again), as a forged one would.
const settled = 10 * time.Second

// RemacRows moves every row MAC of every recorded row-MAC column of d
// (ledger.Ledger.RowMAC) to v2 under the current integrity epoch, row by
// row by compare-and-swap on the MAC (resumable, safe with the application
// writing), so that the older epochs' keys can be retired. Once the fleet
// writes v2 (the form integrity:v2, open for 10 s) and a pass finds no
// v1 MAC and none invalid, it records that the table's v1 MACs are
// refused. A fleet that has not opened the form keeps its v1 MACs: a
// process of the release before would not verify v2.
func RemacRows(ctx context.Context, kr *keyring.Keyring, d Database) ([]MACResult, error) {
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil || st == nil {
		return nil, err
	}
	open, why, err := integrityOpen(ctx, kr, d, st)
	if err != nil {
		return nil, err
	}
	var out []MACResult
	for _, c := range st.MACs {
		r := MACResult{DB: d.Name, Column: c, Epoch: kr.Primary().ID}
		if !open {
			r.Why = why
			out = append(out, r)
			continue
		}
		if err := remacColumn(ctx, kr, d, st, c, &r); err != nil {
			return append(out, r), err
		}
		out = append(out, r)
	}
	// The registry's rows move with each heartbeat; once none is v1, v1
	// rows are refused.
	if _, err := (&fleet.Registry{DB: d.DB, Dialect: d.Dialect, Ledger: d.ledger()}).RefuseV1(ctx, kr); err != nil {
		return out, fmt.Errorf("refusing v1 registry rows: %w", err)
	}
	return out, nil
}

// integrityOpen reports whether the fleet writes integrity records v2,
// and if not why.
func integrityOpen(ctx context.Context, kr *keyring.Keyring, d Database, st *ledger.State) (bool, string, error) {
	unknown, err := (&fleet.Registry{DB: d.DB, Dialect: d.Dialect, Ledger: d.ledger()}).Ready(ctx, kr, fleetgate.IntegrityV2)
	var nr *fleet.FormNotReadyError
	if errors.As(err, &nr) || len(unknown) > 0 {
		return false, "the fleet has not opened integrity:v2 (a process of the release before reads only v1 MACs)", nil
	}
	return err == nil, "", err
}

// remacColumn is RemacRows for one column.
func remacColumn(ctx context.Context, kr *keyring.Keyring, d Database, st *ledger.State, c ledger.MACColumn, r *MACResult) error {
	started := time.Now()
	mac, err := field.NewRowMACFor(kr, c.Table, c.Covers, field.RowMACOptions{Database: st.Database})
	if err != nil {
		return err
	}
	q, err := newMACQueries(d.Dialect, c)
	if err != nil {
		return err
	}
	var after any
	for {
		rows, last, err := q.read(ctx, d.DB, after)
		if err != nil {
			return fmt.Errorf("re-MAC of %s.%s: %w", c.Table, c.Column, err)
		}
		for _, row := range rows {
			if err := remacRow(ctx, d.DB, q, mac, row, r); err != nil {
				return fmt.Errorf("re-MAC of %s.%s: %w", c.Table, c.Column, err)
			}
		}
		if len(rows) < macBatch {
			break
		}
		after = last
	}
	if r.Invalid > 0 || r.Changed > 0 {
		r.Why = fmt.Sprintf("%d MACs do not verify and %d rows changed meanwhile: run again", r.Invalid, r.Changed)
		return nil
	}
	switch opened := formOpened(st, fleetgate.IntegrityV2); {
	case opened.IsZero():
		r.Why = "the ledger does not yet record integrity:v2 as opened (a heartbeat records it once every process declares it): run again to refuse v1 MACs"
		return nil
	case started.Sub(opened) < settled:
		r.Why = "the fleet opened integrity:v2 less than 10 s before: run again to refuse v1 MACs"
		return nil
	}
	if err := d.ledger().Mark(ctx, kr, field.RowMACMovedMark(c.Table)); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return err
	}
	r.Refused = true
	return nil
}

// remacRow verifies one row's MAC and writes a v2 one under the current
// epoch in its place, if it still holds the MAC read.
func remacRow(ctx context.Context, db *sql.DB, q macQueries, mac *field.RowMAC, row macRow, r *MACResult) error {
	r.Scanned++
	current, err := mac.Current(row.tag, row.values...)
	switch {
	case errors.Is(err, field.ErrRowMAC):
		r.Invalid++
		return nil
	case err != nil:
		return err
	case current:
		r.Current++
		return nil
	}
	next, err := mac.Sum(row.values...)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, q.update, next, row.key, row.tag)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		r.Changed++
		return nil
	}
	r.Moved++
	return nil
}

// formOpened is when the ledger records a form opened (zero if not).
func formOpened(st *ledger.State, f fleetgate.Form) time.Time {
	i := slices.IndexFunc(st.Forms, func(x ledger.Form) bool { return x.Name == f && x.IsOpen() })
	if i < 0 {
		return time.Time{}
	}
	return time.UnixMilli(st.Forms[i].Opened)
}

// macQueries are the statements of one row-MAC column's pass.
type macQueries struct {
	first, next, update string
	covers              int
	key                 int // the key's index among the covered columns
}

// macRow is one row read: its key, covered values and MAC.
type macRow struct {
	key    any
	values []any
	tag    []byte
}

func newMACQueries(d field.Dialect, c ledger.MACColumn) (macQueries, error) {
	quote := func(s string) string { q, _ := d.Quote(s); return q }
	for _, n := range append([]string{c.Table, c.Column, c.Key}, c.Covers...) {
		if _, err := d.Quote(n); err != nil {
			return macQueries{}, err
		}
	}
	cols := make([]string, len(c.Covers))
	for i, n := range c.Covers {
		cols[i] = quote(n)
	}
	t, k, m := quote(c.Table), quote(c.Key), quote(c.Column)
	sel := fmt.Sprintf(`SELECT %s, %s FROM %s`, strings.Join(cols, ", "), m, t)
	q := macQueries{
		first:  fmt.Sprintf(`%s ORDER BY %s LIMIT %d`, sel, k, macBatch),
		next:   fmt.Sprintf(`%s WHERE %s > %s ORDER BY %s LIMIT %d`, sel, k, d.Placeholder(1), k, macBatch),
		update: fmt.Sprintf(`UPDATE %s SET %s = %s WHERE %s = %s AND %s = %s`, t, m, d.Placeholder(1), k, d.Placeholder(2), m, d.Placeholder(3)),
		covers: len(c.Covers),
		key:    slices.Index(c.Covers, c.Key),
	}
	return q, nil
}

// read reads the batch of rows after key after (nil: the first batch).
func (q macQueries) read(ctx context.Context, db *sql.DB, after any) ([]macRow, any, error) {
	var rows *sql.Rows
	var err error
	if after == nil {
		rows, err = db.QueryContext(ctx, q.first)
	} else {
		rows, err = db.QueryContext(ctx, q.next, after)
	}
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []macRow
	for rows.Next() {
		vals := make([]any, q.covers)
		ptrs := make([]any, q.covers+1)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var tag []byte
		ptrs[q.covers] = &tag
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = slices.Clone(b) // the driver may reuse it
			}
		}
		out = append(out, macRow{key: vals[q.key], values: vals, tag: tag})
	}
	if len(out) == 0 {
		return nil, nil, rows.Err()
	}
	return out, out[len(out)-1].key, rows.Err()
}

// macsAt counts, in every recorded row-MAC column of d, the MACs of
// integrity epoch id: v2 MACs naming it, which stop verifying when its key
// is retired.
func macsAt(ctx context.Context, d Database, st *ledger.State, id keyring.KeyID) (map[string]int, error) {
	out := map[string]int{}
	for _, c := range st.MACs {
		q, err := newMACQueries(d.Dialect, c)
		if err != nil {
			return nil, err
		}
		var after any
		for {
			rows, last, err := q.read(ctx, d.DB, after)
			if err != nil {
				return nil, fmt.Errorf("reading %s.%s: %w", c.Table, c.Column, err)
			}
			for _, r := range rows {
				if e, ok := field.RowMACEpoch(r.tag); ok && e == id {
					out[c.Table+"."+c.Column]++
				}
			}
			if len(rows) < macBatch {
				break
			}
			after = last
		}
	}
	return out, nil
}
