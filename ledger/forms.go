package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// Form is a ledger's record of one form of stored values (package fleetgate):
// the processes its writing still waits for, or when it was opened. The
// record is what makes a form change safe against a database writer: the
// set of processes a wait began with is in the authenticated ledger, so
// deleting a process's registration never lets the form open early, and an
// opened form stays open (a process that lacks it refuses to start).
type Form struct {
	// Name is the form (fleetgate.Form).
	Name fleetgate.Form `json:"name"`
	// Release is the ward release that introduced the form's kind.
	Release string `json:"release"`
	// Since is when the wait began (Unix milliseconds).
	Since int64 `json:"since"`
	// Waiting are the registered processes (fleet IDs) that did not read
	// the form when last counted, sorted: each must leave cleanly, declare
	// it, or be named by the operator (Skipped) before the form opens.
	Waiting []string `json:"waiting,omitempty"`
	// Skipped are the processes the operator let the form open without.
	Skipped []string `json:"skipped,omitempty"`
	// Opened is when every process read the form (Unix milliseconds); 0
	// while waiting.
	Opened int64 `json:"opened,omitempty"`
}

// IsOpen reports whether the form was opened.
func (f Form) IsOpen() bool { return f.Opened != 0 }

// OpenedAs returns the form as the forms package reports a dependency.
func (f Form) OpenedAs() fleetgate.Opened {
	return fleetgate.Opened{Form: f.Name, Release: f.Release, Opened: time.UnixMilli(f.Opened)}
}

func (f Form) equal(o Form) bool {
	return f.Name == o.Name && f.Release == o.Release && f.Since == o.Since && f.Opened == o.Opened &&
		slices.Equal(f.Waiting, o.Waiting) && slices.Equal(f.Skipped, o.Skipped)
}

func cloneForms(fs []Form) []Form {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Waiting, out[i].Skipped = slices.Clone(out[i].Waiting), slices.Clone(out[i].Skipped)
	}
	return out
}

func sortForms(fs []Form) []Form {
	slices.SortFunc(fs, func(a, b Form) int { return cmp.Compare(a.Name, b.Name) })
	fs = slices.CompactFunc(fs, func(a, b Form) bool { return a.Name == b.Name })
	for i := range fs {
		slices.Sort(fs[i].Waiting)
		fs[i].Waiting = slices.Compact(fs[i].Waiting)
		slices.Sort(fs[i].Skipped)
		fs[i].Skipped = slices.Compact(fs[i].Skipped)
	}
	return fs
}

// OpenedForms returns the forms the verified ledger records as open (none
// for a database without a ledger).
func (l *Ledger) OpenedForms(ctx context.Context, kr *keyring.Keyring) ([]fleetgate.Opened, error) {
	st, err := l.Verified(ctx, kr)
	if err != nil || st == nil {
		return nil, err
	}
	var out []fleetgate.Opened
	for _, f := range st.Forms {
		if f.IsOpen() {
			out = append(out, f.OpenedAs())
		}
	}
	return out, nil
}

// ChangeForms applies change to the verified ledger's form records and
// writes them by compare-and-swap, calling change again on a fresh read
// if another writer won. An opened form stays open whatever change does,
// and a form's record is never removed.
func (l *Ledger) ChangeForms(ctx context.Context, kr *keyring.Keyring, change func(fs []Form) []Form) error {
	return l.update(ctx, kr, normal, func(st *State) {
		was := cloneForms(st.Forms)
		next := change(cloneForms(st.Forms))
		for _, f := range was {
			i := slices.IndexFunc(next, func(n Form) bool { return n.Name == f.Name })
			switch {
			case i < 0:
				next = append(next, f)
			case f.IsOpen():
				next[i] = f
			}
		}
		st.Forms = next
	})
}

// SetExpect records how many processes the fleet runs (0 clears it): see
// [State.Expect].
func (l *Ledger) SetExpect(ctx context.Context, kr *keyring.Keyring, n int) error {
	if n < 0 || n > 1<<20 {
		return fmt.Errorf("ledger: %d processes expected: want 0 to %d", n, 1<<20)
	}
	return l.update(ctx, kr, normal, func(st *State) { st.Expect = n })
}
