package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/keyring"
)

// Grant is the ledger's record of a grant (keyring.Grant, ward grant): a
// reader's file of keys derived for a few columns from some keyring keys.
// The record is what a key retirement checks: a key from which an
// unrevoked grant derives is not retired.
type Grant struct {
	ID     string          `json:"id"`
	Scopes []string        `json:"scopes"` // "table.column"
	Keys   []keyring.KeyID `json:"keys"`
	Issued time.Time       `json:"issued"`
	// Revoked is when the grant was revoked (zero: it is not).
	Revoked time.Time `json:"revoked,omitzero"`
	// To and Out, for a grant sealed under a key service the operator can
	// encrypt to (ward grant --to a KMS key URL), are that URL and the
	// absolute path of the grant file: a rotation re-issues such a grant
	// there with the new primary's keys. Empty for a grant sealed under a
	// reader's master key, which only its reader holds.
	To  string `json:"to,omitempty"`
	Out string `json:"out,omitempty"`
	// Replaces is the ID of the grant this one was re-issued from (which
	// is revoked once this one's file is in place); revoking a grant
	// revokes its successors too ([State.Successors]).
	Replaces string `json:"replaces,omitempty"`
	// Pending is true from the grant's record until its file is written
	// (Out): a pending grant counts as live (its keys are not retired),
	// and the next run promotes it if the file holds it or drops it if
	// the file was never written ([Ledger.PromoteGrant], [Ledger.DropGrant]).
	Pending bool `json:"pending,omitempty"`
	// Finished is when the revocation's rotation and re-key finished, or
	// the grant was replaced by its re-issue (zero: not yet): revoking a
	// finished grant again does nothing.
	Finished time.Time `json:"finished,omitzero"`
	// Floors are the namespaces whose subject key floor the revocation
	// raised ([Ledger.RaiseKeyFloor]), each once.
	Floors []string `json:"floors,omitempty"`
}

// Live reports whether the grant is not revoked.
func (g Grant) Live() bool { return g.Revoked.IsZero() }

func (g Grant) equal(o Grant) bool {
	return g.ID == o.ID && slices.Equal(g.Scopes, o.Scopes) && slices.Equal(g.Keys, o.Keys) && g.Issued.Equal(o.Issued) && g.Revoked.Equal(o.Revoked) &&
		g.To == o.To && g.Out == o.Out && g.Replaces == o.Replaces && g.Pending == o.Pending && g.Finished.Equal(o.Finished) &&
		slices.Equal(g.Floors, o.Floors)
}

// Successors returns the grants re-issued from grant id, and from those,
// and so on (Grant.Replaces), revoked or not, in the ledger's order.
func (s *State) Successors(id string) []Grant {
	var out []Grant
	from := []string{id}
	for len(from) > 0 {
		var next []string
		for _, g := range s.Grants {
			if g.Replaces != "" && slices.Contains(from, g.Replaces) && !slices.ContainsFunc(out, func(o Grant) bool { return o.ID == g.ID }) {
				out = append(out, g)
				next = append(next, g.ID)
			}
		}
		from = next
	}
	return out
}

// ErrUnknownGrant means the ledger records no grant of that ID.
var ErrUnknownGrant = errors.New("ledger: no grant of that ID is recorded")

// GrantOf is the record of a grant as issued.
func GrantOf(g *keyring.Grant) Grant {
	r := Grant{ID: g.ID(), Keys: g.Keys(), Issued: g.Created()}
	for _, s := range g.Scopes() {
		r.Scopes = append(r.Scopes, s.String())
	}
	return r
}

// RecordGrant records a grant issued for the database's values, before its
// file is handed out.
func (l *Ledger) RecordGrant(ctx context.Context, kr *keyring.Keyring, g Grant) error {
	if g.ID == "" || len(g.Scopes) == 0 || len(g.Keys) == 0 {
		return fmt.Errorf("ledger: a grant record needs an ID, scopes and keys")
	}
	return l.update(ctx, kr, normal, func(st *State) {
		st.Grants = slices.DeleteFunc(st.Grants, func(o Grant) bool { return o.ID == g.ID })
		st.Grants = append(st.Grants, g)
	})
}

// RevokeGrant records that grant id is revoked at the given time (a grant
// revoked earlier keeps its first time) and returns its record.
func (l *Ledger) RevokeGrant(ctx context.Context, kr *keyring.Keyring, id string, at time.Time) (Grant, error) {
	var out Grant
	found := false
	err := l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Grants, func(g Grant) bool { return g.ID == id })
		if found = i >= 0; !found {
			return
		}
		if st.Grants[i].Live() {
			st.Grants[i].Revoked = at.UTC().Truncate(time.Second)
		}
		out = st.Grants[i]
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: %q", ErrUnknownGrant, id)
	}
	return out, err
}

// PromoteGrant records that pending grant id's file is written: the grant
// is live. A grant that is not pending is left as it is.
func (l *Ledger) PromoteGrant(ctx context.Context, kr *keyring.Keyring, id string) error {
	return l.changeGrant(ctx, kr, id, func(st *State, i int) { st.Grants[i].Pending = false })
}

// DropGrant removes the record of pending grant id, whose file was never
// written: nobody holds it. A grant that is not pending is never dropped
// ([ErrNotPending]).
func (l *Ledger) DropGrant(ctx context.Context, kr *keyring.Keyring, id string) error {
	notPending := false
	err := l.changeGrant(ctx, kr, id, func(st *State, i int) {
		if notPending = !st.Grants[i].Pending; !notPending {
			st.Grants = slices.Delete(st.Grants, i, i+1)
		}
	})
	if err == nil && notPending {
		err = fmt.Errorf("%w: %q", ErrNotPending, id)
	}
	return err
}

// ErrNotPending means a grant whose file was written was asked to be
// dropped.
var ErrNotPending = errors.New("ledger: the grant is not pending")

// FinishRevocation records that revoked grant id needs nothing more: its
// revocation's rotation and re-key are done, or a re-issue replaced it.
// A grant that is not revoked, or already finished, is left as it is.
func (l *Ledger) FinishRevocation(ctx context.Context, kr *keyring.Keyring, id string, at time.Time) error {
	return l.changeGrant(ctx, kr, id, func(st *State, i int) {
		if g := &st.Grants[i]; !g.Live() && g.Finished.IsZero() {
			g.Finished = at.UTC().Truncate(time.Second)
		}
	})
}

// changeGrant applies fn to the record of grant id ([ErrUnknownGrant]
// without one).
func (l *Ledger) changeGrant(ctx context.Context, kr *keyring.Keyring, id string, fn func(st *State, i int)) error {
	found := false
	err := l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Grants, func(g Grant) bool { return g.ID == id })
		if found = i >= 0; found {
			fn(st, i)
		}
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: %q", ErrUnknownGrant, id)
	}
	return err
}

// KeyFloorCounter names the ledger counter of a subject namespace's key
// floor ([State.Counters]): how many revocations of per-subject grants
// raised it. subject.Store seals only under key versions at or above the
// floor it sets (subject.KeyFloor), so that a database writer who deletes
// the versions a revocation created, or restores the key table from
// before it, cannot make the store seal under keys the revoked grant's
// holder kept: the floor is authenticated and anchored, and a key row's
// version is bound to its wrap.
func KeyFloorCounter(namespace string) string { return "subject.floor:" + namespace }

// RaiseKeyFloor raises the key floor of namespace once for the revocation
// of grant id (recorded in the grant's Floors, in the same write, so that a
// revocation run again after a kill raises nothing more), and returns the
// namespace's count of raises.
func (l *Ledger) RaiseKeyFloor(ctx context.Context, kr *keyring.Keyring, id, namespace string) (uint64, error) {
	var k uint64
	name := KeyFloorCounter(namespace)
	err := l.changeGrant(ctx, kr, id, func(st *State, i int) {
		g := &st.Grants[i]
		if !slices.Contains(g.Floors, namespace) {
			g.Floors = append(g.Floors, namespace)
			if st.Counters == nil {
				st.Counters = map[string]uint64{}
			}
			st.Counters[name]++
		}
		k = st.Counters[name]
	})
	return k, err
}

// LiveGrants returns the unrevoked grants that derive from key id.
func (s *State) LiveGrants(id keyring.KeyID) []Grant {
	var out []Grant
	for _, g := range s.Grants {
		if g.Live() && slices.Contains(g.Keys, id) {
			out = append(out, g)
		}
	}
	return out
}

// SubjectColumns returns the recorded columns sealed under subject keys
// that scopes (a grant's, TABLE.COLUMN) name, in the ledger's order.
func (s *State) SubjectColumns(scopes []string) []Column {
	var out []Column
	for _, c := range s.Columns {
		if c.Subject != "" && slices.Contains(scopes, c.Table+"."+c.Column) {
			out = append(out, c)
		}
	}
	return out
}

func cloneGrants(gs []Grant) []Grant {
	out := slices.Clone(gs)
	for i := range out {
		out[i].Scopes, out[i].Keys, out[i].Floors = slices.Clone(out[i].Scopes), slices.Clone(out[i].Keys), slices.Clone(out[i].Floors)
	}
	slices.SortFunc(out, func(a, b Grant) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
