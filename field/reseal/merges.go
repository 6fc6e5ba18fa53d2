package reseal

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
)

// Merges is what a blind index's normalisation would merge in a column:
// how many index values stand for more than one distinct value, and how
// many rows hold those values. A UNIQUE constraint over the values (or a
// unique index built on the blind index) would refuse them.
type Merges struct {
	// Groups is the number of index values shared by distinct values
	// ("Alice@x" and "alice@x" with case folding).
	Groups int
	// Rows is the number of rows holding a value of such a group.
	Rows int
	// Unreadable counts rows whose value could not be opened here (keys
	// only their users hold, a forgotten subject's): not compared.
	Unreadable int
}

// IndexMerges reads the column (this shard) and reports which distinct
// values Job.Index would give the same blind index, without writing
// anything: a migration that adds a normalising index (NormalizeFold)
// checks it first where a unique constraint keeps those values apart.
// Values are compared by hash; none is kept or reported.
func (r *Job) IndexMerges(ctx context.Context) (Merges, error) {
	if r.Index == nil {
		return Merges{}, errors.New("reseal: IndexMerges needs Job.Index")
	}
	q, err := r.queries(ctx)
	if err != nil {
		return Merges{}, err
	}
	type group struct {
		first [32]byte
		rows  int
		mixed bool
	}
	groups := map[string]*group{}
	var m Merges
	err = r.scan(ctx, q, func(rows []dbRow) error {
		for _, row := range rows {
			pt, ok := r.plaintextOf(row)
			if !ok {
				m.Unreadable++
				continue
			}
			if pt == nil {
				continue
			}
			idx := string(r.Index.Compute(string(pt)))
			h := sha256.Sum256(pt)
			clear(pt)
			g := groups[idx]
			if g == nil {
				groups[idx] = &group{first: h, rows: 1}
				continue
			}
			g.rows++
			g.mixed = g.mixed || g.first != h
		}
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("reseal: reading %s.%s: %w", r.Column.Table(), r.Column.Name(), err)
	}
	for _, g := range groups {
		if g.mixed {
			m.Groups++
			m.Rows += g.rows
		}
	}
	return m, nil
}

// plaintextOf is a row's value in the clear: the plaintext a mixed-mode
// column still holds, or the opened ciphertext; nil for NULL; ok false
// when it does not open here.
func (r *Job) plaintextOf(row dbRow) ([]byte, bool) {
	if row.val == nil {
		return nil, true
	}
	st, ct, _ := r.classify(row, r.Column.Keyring().Primary().ID)
	if st == statePlain {
		switch v := row.val.(type) {
		case []byte:
			return append([]byte(nil), v...), true
		case string:
			return []byte(v), true
		}
		return nil, false
	}
	rk, err := row.rowKey()
	if err != nil {
		return nil, false
	}
	pt, err := r.Column.Open(rk, ct)
	return pt, err == nil
}
