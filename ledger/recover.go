package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/keyring"
)

// maxRecoveries bounds the recoveries a ledger keeps.
const maxRecoveries = 16

// Recovery records one recovery of a ledger that had gone back in time
// (a failover that lost its last commits, a restore): when, the ledger's
// counter found and the anchor's, and what the anchor proved lost.
type Recovery struct {
	At      time.Time `json:"at"`
	Found   uint64    `json:"found"`
	Anchor  uint64    `json:"anchor"`
	Summary string    `json:"summary"`
}

// Inspection is a ledger read for a recovery: its state, authenticated
// but not compared with the anchor, and the anchor.
type Inspection struct {
	// State is the database's ledger; its MAC, keyring and generation
	// are verified.
	State *State
	// Anchor is what the keyring file remembers of the database (zero
	// when Anchored is false).
	Anchor   Anchor
	Anchored bool
	// Behind is what the anchor can prove the database lost; empty when
	// the ledger is not behind its anchor.
	Behind Behind
}

// Behind is the difference between an anchor and an older ledger. (The
// forgets a ledger lost are told by identity from its tallies and the
// anchor's: package lifecycle, with the forget journals.)
type Behind struct {
	// Writes is how many ledger writes were lost (the counter gap).
	Writes uint64 `json:"writes"`
	// Marks are marks the anchor records and the ledger lacks.
	Marks []string `json:"marks,omitempty"`
	// Counters are, per counter, how many counts were lost (the forgets
	// of a namespace).
	Counters map[string]uint64 `json:"counters,omitempty"`
	// Columns are columns the anchor records and the ledger lacks.
	Columns []string `json:"columns,omitempty"`
	// Retired are keys the ledger records as usable and the keyring no
	// longer holds: retired after the ledger's copy was taken.
	Retired []keyring.KeyID `json:"retired,omitempty"`
	// Added are keys the keyring holds and the ledger lacks.
	Added []keyring.KeyID `json:"added,omitempty"`
}

// Lost reports whether b records any loss.
func (b Behind) Lost() bool {
	return b.Writes > 0 || len(b.Marks)+len(b.Counters)+len(b.Columns)+len(b.Retired)+len(b.Added) > 0
}

// Inspect reads the ledger for a recovery: it authenticates it like
// [Ledger.Verified] (its MAC, its keyring, a keyring file not older than
// the ledger) but, instead of refusing a ledger behind its anchor, says
// what the anchor proves was lost. Keys the ledger records that kr lacks
// are reported as retired since, not refused.
func (l *Ledger) Inspect(ctx context.Context, kr *keyring.Keyring) (Inspection, error) {
	s, err := l.read(ctx)
	if err != nil {
		return Inspection{}, err
	}
	if s == nil {
		return Inspection{}, fmt.Errorf("%w: nothing to recover from (restore the ledger table from a backup first)", ErrMissing)
	}
	st, err := authenticate(s, kr)
	if err != nil {
		return Inspection{}, err
	}
	in := Inspection{State: st}
	in.Anchor, in.Anchored = core(kr).Anchor(st.Database)
	in.Behind = behind(st, in.Anchor, kr)
	return in, nil
}

// behind compares a ledger with its anchor and keyring.
func behind(st *State, a Anchor, kr *keyring.Keyring) Behind {
	var b Behind
	if a.Counter > st.Counter {
		b.Writes = a.Counter - st.Counter
	}
	for _, m := range a.Marks {
		if !slices.Contains(st.Marks, m) {
			b.Marks = append(b.Marks, m)
		}
	}
	for name, n := range a.Counters {
		if n > st.Counters[name] {
			if b.Counters == nil {
				b.Counters = map[string]uint64{}
			}
			b.Counters[name] = n - st.Counters[name]
		}
	}
	have := columnNames(st)
	for _, c := range a.Columns {
		if !slices.Contains(have, c) {
			b.Columns = append(b.Columns, c)
		}
	}
	for _, k := range st.Keys {
		if _, ok := kr.Lookup(k.ID); !ok && k.State != RetiredState {
			b.Retired = append(b.Retired, k.ID)
		}
	}
	for _, info := range kr.Keys() {
		if !slices.ContainsFunc(st.Keys, func(k Key) bool { return k.ID == info.ID }) {
			b.Added = append(b.Added, info.ID)
		}
	}
	return b
}

// columnNames names a state's columns as an anchor does ("table.column").
func columnNames(st *State) []string {
	out := make([]string, len(st.Columns))
	for i, c := range st.Columns {
		out[i] = c.Table + "." + c.Column
	}
	return out
}

// anchorHas reports whether an anchor already records a state's counters
// and columns.
func anchorHas(a Anchor, st *State) bool {
	for name, n := range st.Counters {
		if a.Counters[name] < n {
			return false
		}
	}
	for name, t := range st.Tallies {
		if a.Tallies[name].Count < t.Count {
			return false
		}
	}
	for _, c := range columnNames(st) {
		if !slices.Contains(a.Columns, c) {
			return false
		}
	}
	return true
}

// RecoverOptions say what a recovery writes beyond what the anchor
// proves.
type RecoverOptions struct {
	// Counters set counters to at least these values (the valid
	// tombstones of a namespace once its lost forgets were re-applied)
	// instead of the anchor's: a forget the journals prove left nothing to
	// tombstone is counted by the anchor, not by the database. Counters
	// not named rise to the anchor's. No counter goes below the
	// database's.
	Counters map[string]uint64
	// Summary describes the recovery in its record.
	Summary string
}

// Recover writes the ledger of a database that went back in time (a lossy
// failover, a restore, or a database writer's rollback: they look alike)
// so that it matches its anchor again: the one write that accepts a ledger
// behind its anchor, for an operator who holds the keyring's custody (a
// keyring opened with its master key or KMS). It never re-anchors what the
// anchor proves newer: every mark the anchor records is kept, a key the
// keyring no longer holds is recorded as retired (it can never be
// re-enabled), every key the keyring holds is recorded with its state,
// counters rise to the anchor's, or to opts.Counters where the caller
// re-applied lost forgets first (package lifecycle), and never fall, and every column
// the ledger or anchor names is listed in [State.Recheck]. It records
// the recovery in [State.Recoveries] and anchors the result.
func (l *Ledger) Recover(ctx context.Context, kr *keyring.Keyring, opts RecoverOptions) (*State, error) {
	err := l.update(ctx, kr, recovering, func(st *State) {
		a, _ := core(kr).Anchor(st.Database)
		b := behind(st, a, kr)
		found := st.Counter
		for i, k := range st.Keys {
			if slices.Contains(b.Retired, k.ID) {
				st.Keys[i].State = RetiredState
			}
		}
		for _, id := range b.Added {
			st.Keys = append(st.Keys, Key{ID: id})
		}
		st.Marks = slices.Compact(slices.Sorted(slices.Values(append(st.Marks, a.Marks...))))
		if st.Counters == nil && len(a.Counters)+len(opts.Counters) > 0 {
			st.Counters = map[string]uint64{}
		}
		for name, n := range a.Counters {
			if _, given := opts.Counters[name]; !given {
				st.Counters[name] = max(st.Counters[name], n)
			}
		}
		for name, n := range opts.Counters {
			st.Counters[name] = max(st.Counters[name], n)
		}
		for name, t := range a.Tallies { // the recovery accounted for the anchor's forgets, or accepted their loss
			if t.Count > st.Tally(name).Count {
				if st.Tallies == nil {
					st.Tallies = map[string]Tally{}
				}
				st.Tallies[name] = t
			}
		}
		st.Recheck = append(st.Recheck, append(columnNames(st), a.Columns...)...)
		st.Recoveries = append(st.Recoveries, Recovery{At: time.Now().UTC().Truncate(time.Second), Found: found, Anchor: a.Counter, Summary: opts.Summary})
		if n := len(st.Recoveries); n > maxRecoveries {
			st.Recoveries = slices.Clone(st.Recoveries[n-maxRecoveries:])
		}
	})
	if err != nil {
		return nil, err
	}
	return l.Verified(ctx, kr)
}

// Rechecked removes a column ("table.column") from [State.Recheck]: a
// census after a recovery found it done. A column not listed is no error.
func (l *Ledger) Rechecked(ctx context.Context, kr *keyring.Keyring, column string) error {
	return l.update(ctx, kr, normal, func(st *State) {
		st.Recheck = slices.DeleteFunc(st.Recheck, func(c string) bool { return c == column })
	})
}
