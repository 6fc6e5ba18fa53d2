package ledger

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// IndexColumn is a recorded blind index ([field.NewIndex]): the table,
// the sealed column it indexes, the index's name (one column may have
// several), the columns holding it, its normaliser's name and version, its
// size, and the integrity epoch its stored values are computed under,
// which only a re-key changes (lifecycle.Reindex). A key retirement
// refuses while an index is computed, or being re-keyed, under the key's
// epoch.
//
// An index that can be re-keyed has two columns: Index and Spare, each
// with its own unique index if the values must be unique. Slot says which
// holds the current values; a re-key fills the other (Rekey), switches,
// and clears the first. Epoch 0 is a v1 index ([field.NewBlindIndex],
// keyed by the keyring's root), recorded by [Ledger.Indexer] with
// [IndexerOptions.FromV1] so that a re-key moves it to v2.
type IndexColumn struct {
	Table             string        `json:"table"`
	Column            string        `json:"column"`
	Name              string        `json:"name"`
	Index             string        `json:"index"`
	Spare             string        `json:"spare,omitempty"`
	Slot              int           `json:"slot,omitempty"`
	Normalizer        string        `json:"normalizer"`
	NormalizerVersion uint32        `json:"normalizer_version"`
	Size              int           `json:"size"`
	Epoch             keyring.KeyID `json:"epoch"`
	Rekey             *IndexRekey   `json:"rekey,omitempty"`
}

// IndexRekey is a blind index's re-key under way: the epoch of the values
// it writes into the other slot, and its phase.
type IndexRekey struct {
	Epoch keyring.KeyID `json:"epoch"`
	Phase string        `json:"phase"`
}

// The phases of a re-key: processes write both slots and look up both
// (RekeyBoth); then, once the job filled the other slot for every row,
// they write it alone and still look up both (RekeyFilled). The job moves
// on from each phase only once every registered process acknowledged it
// ([IndexAck]).
const (
	RekeyBoth   = "both"
	RekeyFilled = "filled"
)

// IndexAck is the form a process declares once it follows a re-key's
// phase; the re-key waits for every registered process to declare it. It
// is of the integrity kind, which releases before re-keys already read as
// well formed, so that a fleet of mixed releases keeps its registry rows
// valid (the older processes never declare it: the re-key waits for them,
// or for the operator to skip them).
//
// The index is named by a digest of its table, column and name, which
// keeps the form short whatever the identifiers.
func IndexAck(c IndexColumn, phase string) fleetgate.Form {
	h := sha256.Sum256([]byte(c.Table + "\x00" + c.Column + "\x00" + c.Name))
	return fleetgate.Form(fmt.Sprintf("%s:index.%x@%v.%s", fleetgate.KindIntegrity, h[:8], c.Rekey.Epoch, phase))
}

// Columns returns the column holding the current values and the other
// slot's column ("" without a spare).
func (c IndexColumn) Columns() (cur, other string) {
	if c.Slot == 1 {
		return c.Spare, c.Index
	}
	return c.Index, c.Spare
}

func (c IndexColumn) options(db string, norm field.Normalizer, epoch keyring.KeyID) field.IndexOptions {
	return field.IndexOptions{Database: db, Name: c.Name, Normalizer: norm, Size: c.Size, Epoch: epoch}
}

// Compute returns the index of c under epoch (0: v1, keyed by the
// keyring's root), bound to database: the values a process computes for
// the record (a job that writes indexes calls it with the record's epoch).
func (c IndexColumn) Compute(kr *keyring.Keyring, db string, norm field.Normalizer, epoch keyring.KeyID) (*field.BlindIndex, error) {
	if epoch == 0 {
		return field.NewBlindIndex(kr, c.Table, c.Column, field.WithIndexSize(c.Size), field.WithNormalizer(norm.Func))
	}
	return field.NewIndex(kr, c.Table, c.Column, c.options(db, norm, epoch))
}

// sameSpec reports whether asking for o agrees with the record c: the
// same index, columns, normaliser and size (a spare o names may be new to
// c; the epoch and re-key are c's).
func (c IndexColumn) sameSpec(o IndexColumn) bool {
	return c.sameIndex(o) && c.Index == o.Index && (c.Spare == o.Spare || c.Spare == "") &&
		c.Normalizer == o.Normalizer && c.NormalizerVersion == o.NormalizerVersion && c.Size == o.Size
}

func (c IndexColumn) equal(o IndexColumn) bool {
	a, b := c, o
	a.Rekey, b.Rekey = nil, nil
	return a == b && (c.Rekey == nil) == (o.Rekey == nil) && (c.Rekey == nil || *c.Rekey == *o.Rekey)
}

// sameIndex reports whether two records name the same index.
func (c IndexColumn) sameIndex(o IndexColumn) bool {
	return c.Table == o.Table && c.Column == o.Column && c.Name == o.Name
}

// sortIndexes orders xs by table, column and name. It sorts through
// package sort's reflection-based swap rather than a generic sort of the
// struct: one instantiation of slices' sort for this struct added ~16 KiB
// to the CLI, which stays under its 30 MiB wall (cmd/ward TestBinarySize).
func sortIndexes(xs []IndexColumn) []IndexColumn {
	sort.SliceStable(xs, func(i, j int) bool {
		a, b := xs[i], xs[j]
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Name, b.Name)) < 0
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
// normaliser, size or index column, or with a spare column (an index
// that can be re-keyed: use [Ledger.Indexer], which follows a re-key), and
// with an error matching keyring.ErrEpochEnded if the recorded epoch's
// key was retired.
func (l *Ledger) Index(ctx context.Context, kr *keyring.Keyring, c IndexColumn, norm field.Normalizer) (*field.BlindIndex, error) {
	if c.Spare != "" {
		return nil, fmt.Errorf("ledger: index %s of %s.%s has a spare column: use Ledger.Indexer, which follows its re-keys", c.Name, c.Table, c.Column)
	}
	db, rec, err := l.resolveIndex(ctx, kr, c, norm, false)
	if err != nil {
		return nil, err
	}
	if rec.Spare != "" || rec.Epoch == 0 {
		return nil, fmt.Errorf("%w: %s of %s.%s can be re-keyed (spare column %q) or is v1: use Ledger.Indexer", ErrIndexChanged, rec.Name, rec.Table, rec.Column, rec.Spare)
	}
	return rec.Compute(kr, db, norm, rec.Epoch)
}

// resolveIndex verifies the ledger (recording one first on a first
// start), fills in c's defaults, and returns the database's ID and the
// ledger's record of the index, recording c first if it has none (under
// the current epoch, or as v1 with fromV1). A spare column given for a
// record without one is added to it.
func (l *Ledger) resolveIndex(ctx context.Context, kr *keyring.Keyring, c IndexColumn, norm field.Normalizer, fromV1 bool) (string, IndexColumn, error) {
	c.Normalizer, c.NormalizerVersion = norm.Name, norm.Version
	c.Name = cmp.Or(c.Name, c.Column)
	c.Size = cmp.Or(c.Size, field.DefaultIndexSize)
	c.Slot, c.Rekey = 0, nil
	for _, n := range []string{c.Table, c.Column, c.Index, cmp.Or(c.Spare, c.Index)} {
		if _, err := field.QuoteIdent(n); err != nil {
			return "", c, err
		}
	}
	if c.Spare == c.Index {
		return "", c, fmt.Errorf("ledger: index %s of %s.%s: its spare column is its index column", c.Name, c.Table, c.Column)
	}
	st, err := l.Verified(ctx, kr)
	if err == nil && st == nil {
		if err = l.Record(ctx, kr); err == nil {
			st, err = l.Verified(ctx, kr)
		}
	}
	if err != nil {
		return "", c, err
	}
	if i := slices.IndexFunc(st.Indexes, c.sameIndex); i >= 0 {
		rec := st.Indexes[i]
		if !rec.sameSpec(c) {
			return "", c, fmt.Errorf("%w: %s of %s.%s is recorded in %s (spare %q) as %s v%d of %d bytes, asked for in %s (spare %q) as %s v%d of %d bytes",
				ErrIndexChanged, c.Name, c.Table, c.Column, rec.Index, rec.Spare, rec.Normalizer, rec.NormalizerVersion, rec.Size, c.Index, c.Spare, c.Normalizer, c.NormalizerVersion, c.Size)
		}
		if c.Spare == "" || rec.Spare != "" {
			return st.Database, rec, nil
		}
	}
	if !fromV1 {
		c.Epoch = kr.Primary().ID
	}
	rec, err := l.recordIndex(ctx, kr, c)
	return st.Database, rec, err
}

// recordIndex records c unless the ledger already records the index (a
// concurrent first start), or adds c's spare column to the record: it
// returns what the ledger then holds.
func (l *Ledger) recordIndex(ctx context.Context, kr *keyring.Keyring, c IndexColumn) (IndexColumn, error) {
	var full bool
	err := l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Indexes, c.sameIndex)
		switch {
		case i >= 0 && st.Indexes[i].Spare == "" && c.Spare != "" && st.Indexes[i].Index == c.Index:
			st.Indexes[i].Spare = c.Spare
			c = st.Indexes[i]
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

// ChangeIndex applies change to the ledger's record of the index named
// like c (table, column, name), by compare-and-swap, and returns the
// record it wrote; a re-key job moves through its phases with it.
func (l *Ledger) ChangeIndex(ctx context.Context, kr *keyring.Keyring, c IndexColumn, change func(*IndexColumn) error) (IndexColumn, error) {
	var out IndexColumn
	var cerr error
	err := l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Indexes, c.sameIndex)
		if i < 0 {
			cerr = fmt.Errorf("ledger: no blind index %s of %s.%s is recorded", c.Name, c.Table, c.Column)
			return
		}
		rec := st.Indexes[i]
		if rec.Rekey != nil {
			r := *rec.Rekey
			rec.Rekey = &r
		}
		if cerr = change(&rec); cerr == nil {
			st.Indexes[i], out = rec, rec
		}
	})
	if cerr != nil {
		return out, cerr
	}
	if err != nil && !errors.Is(err, ErrAnchorNotSaved) {
		return out, fmt.Errorf("ledger: changing blind index %s of %s.%s: %w", c.Name, c.Table, c.Column, err)
	}
	return out, nil
}

// IndexesAt returns the recorded blind indexes computed, or being
// re-keyed, under an integrity epoch.
func (st *State) IndexesAt(epoch keyring.KeyID) []IndexColumn {
	var out []IndexColumn
	for _, x := range st.Indexes {
		if x.Epoch == epoch || x.Rekey != nil && x.Rekey.Epoch == epoch {
			out = append(out, x)
		}
	}
	return out
}

// cloneIndexes copies records, their re-keys included.
func cloneIndexes(xs []IndexColumn) []IndexColumn {
	out := slices.Clone(xs)
	for i := range out {
		if r := out[i].Rekey; r != nil {
			c := *r
			out[i].Rekey = &c
		}
	}
	return out
}
