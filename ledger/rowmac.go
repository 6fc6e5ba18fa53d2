package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// MACColumn is a recorded column of row MACs (field.RowMAC): the table,
// the column holding the MAC, the row-key column (unique: a re-MAC pass
// scans by it) and the columns the MAC covers, in order.
type MACColumn struct {
	Table  string   `json:"table"`
	Column string   `json:"column"`
	Key    string   `json:"key"`
	Covers []string `json:"covers"`
}

func (c MACColumn) equal(o MACColumn) bool {
	return c.Table == o.Table && c.Column == o.Column && c.Key == o.Key && slices.Equal(c.Covers, o.Covers)
}

func cloneMACs(ms []MACColumn) []MACColumn {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Covers = slices.Clone(out[i].Covers)
	}
	return out
}

func sortMACs(ms []MACColumn) []MACColumn {
	slices.SortFunc(ms, func(a, b MACColumn) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Column, b.Column))
	})
	return ms
}

// maxMACColumns bounds the recorded row-MAC columns.
const maxMACColumns = 256

// RowMAC returns the row MAC of c.Covers in c.Table, bound to the
// database (its verified ledger's ID), and records the column, so that a
// rotation moves its MACs to each new integrity epoch (lifecycle.Rotate)
// and ward keyring retire knows they are moved. v1 MACs (bound to no
// database) are refused if the ledger records that the table's were moved
// (field.RowMACMovedMark), and, with a gate, once the gate learns it. A
// database without a ledger yet gets one first (a first start).
func (l *Ledger) RowMAC(ctx context.Context, kr *keyring.Keyring, c MACColumn, gate *fleetgate.Gate) (*field.RowMAC, error) {
	for _, n := range append([]string{c.Table, c.Column, c.Key}, c.Covers...) {
		if _, err := field.QuoteIdent(n); err != nil {
			return nil, err
		}
	}
	if len(c.Covers) == 0 || !slices.Contains(c.Covers, c.Key) {
		return nil, fmt.Errorf("ledger: row MAC of %s: its row key %q must be among the columns it covers", c.Table, c.Key)
	}
	st, err := l.Verified(ctx, kr)
	if err == nil && st == nil {
		if err = l.Record(ctx, kr); err == nil {
			st, err = l.Verified(ctx, kr)
		}
	}
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(st.MACs, c.equal) {
		err := l.update(ctx, kr, normal, func(st *State) {
			i := slices.IndexFunc(st.MACs, func(o MACColumn) bool { return o.Table == c.Table && o.Column == c.Column })
			if i < 0 && len(st.MACs) < maxMACColumns {
				st.MACs = append(st.MACs, c)
			} else if i >= 0 {
				st.MACs[i] = c
			}
		})
		if err != nil && !errors.Is(err, ErrAnchorNotSaved) {
			return nil, fmt.Errorf("ledger: recording the row MAC of %s.%s: %w", c.Table, c.Column, err)
		}
	}
	marked, err := l.Marked(ctx, kr, field.RowMACMovedMark(c.Table))
	if err != nil {
		return nil, err
	}
	return field.NewRowMACFor(kr, c.Table, c.Covers, field.RowMACOptions{Database: st.Database, Gate: gate, RefuseV1: marked})
}
