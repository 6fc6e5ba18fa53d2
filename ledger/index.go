package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// IndexColumn is a recorded blind index v2 ([field.NewIndex]): the table,
// the sealed column it indexes, the index's name (one column may have
// several), the column holding it, its normaliser's name and version, its
// size, and the integrity epoch its stored values are computed under,
// which only a re-key changes. A key retirement refuses while an index is
// computed under the key's epoch.
type IndexColumn struct {
	Table             string        `json:"table"`
	Column            string        `json:"column"`
	Name              string        `json:"name"`
	Index             string        `json:"index"`
	Normalizer        string        `json:"normalizer"`
	NormalizerVersion uint32        `json:"normalizer_version"`
	Size              int           `json:"size"`
	Epoch             keyring.KeyID `json:"epoch"`
}

func (c IndexColumn) equal(o IndexColumn) bool { return c == o }

// sameIndex reports whether two records name the same index.
func (c IndexColumn) sameIndex(o IndexColumn) bool {
	return c.Table == o.Table && c.Column == o.Column && c.Name == o.Name
}

func sortIndexes(xs []IndexColumn) []IndexColumn {
	slices.SortFunc(xs, func(a, b IndexColumn) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Name, b.Name))
	})
	return xs
}

// maxIndexes bounds the recorded blind indexes.
const maxIndexes = 256

// ErrIndexChanged means an index is asked for with another normaliser,
// size or index column than the ledger records for it: its stored values
// would not match what it computes. A change of any of them is a new
// index (another name), or a re-key.
var ErrIndexChanged = errors.New("ledger: the blind index is recorded otherwise")

// Index returns the blind index v2 of c, bound to the database (its
// verified ledger's ID) and computed under the integrity epoch the ledger
// records for it; an index not recorded yet is recorded under the
// current epoch (the primary key's). c.Normalizer and
// c.NormalizerVersion are taken from norm; c.Name defaults to c.Column,
// c.Size to field.DefaultIndexSize, and c.Epoch is the ledger's. A
// database without a ledger gets one first (a first start). It fails
// with [ErrIndexChanged] if the ledger records the index with another
// normaliser, size or index column, and with an error matching
// keyring.ErrEpochEnded if the recorded epoch's key was retired.
func (l *Ledger) Index(ctx context.Context, kr *keyring.Keyring, c IndexColumn, norm field.Normalizer) (*field.BlindIndex, error) {
	c.Normalizer, c.NormalizerVersion = norm.Name, norm.Version
	c.Name = cmp.Or(c.Name, c.Column)
	c.Size = cmp.Or(c.Size, field.DefaultIndexSize)
	for _, n := range []string{c.Table, c.Column, c.Index} {
		if _, err := field.QuoteIdent(n); err != nil {
			return nil, err
		}
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
	i := slices.IndexFunc(st.Indexes, c.sameIndex)
	if i < 0 {
		c.Epoch = kr.Primary().ID
		if c, err = l.recordIndex(ctx, kr, c); err != nil {
			return nil, err
		}
	} else {
		rec := st.Indexes[i]
		c.Epoch = rec.Epoch
		if c != rec {
			return nil, fmt.Errorf("%w: %s of %s.%s is recorded in %s as %s v%d of %d bytes, asked for in %s as %s v%d of %d bytes",
				ErrIndexChanged, c.Name, c.Table, c.Column, rec.Index, rec.Normalizer, rec.NormalizerVersion, rec.Size, c.Index, c.Normalizer, c.NormalizerVersion, c.Size)
		}
	}
	return field.NewIndex(kr, c.Table, c.Column, field.IndexOptions{Database: st.Database, Name: c.Name, Normalizer: norm, Size: c.Size, Epoch: c.Epoch})
}

// recordIndex records c unless the ledger already records the index (a
// concurrent first start): it returns what the ledger holds.
func (l *Ledger) recordIndex(ctx context.Context, kr *keyring.Keyring, c IndexColumn) (IndexColumn, error) {
	var full bool
	err := l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Indexes, c.sameIndex)
		switch {
		case i >= 0:
			c = st.Indexes[i]
		case len(st.Indexes) >= maxIndexes:
			full = true
		default:
			st.Indexes = append(st.Indexes, c)
		}
	})
	if full {
		return c, fmt.Errorf("ledger: the ledger already records %d blind indexes", maxIndexes)
	}
	if err != nil && !errors.Is(err, ErrAnchorNotSaved) {
		return c, fmt.Errorf("ledger: recording blind index %s of %s.%s: %w", c.Name, c.Table, c.Column, err)
	}
	return c, nil
}

// IndexesAt returns the recorded blind indexes computed under an
// integrity epoch.
func (st *State) IndexesAt(epoch keyring.KeyID) []IndexColumn {
	var out []IndexColumn
	for _, x := range st.Indexes {
		if x.Epoch == epoch {
			out = append(out, x)
		}
	}
	return out
}
