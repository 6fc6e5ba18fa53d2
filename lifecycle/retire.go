package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// Reference is one place in a database that still uses a keyring key.
type Reference struct {
	DB string
	// What says where, in words ("12 values in notes.body are sealed
	// under it").
	What string
	// Kept is true for a reference that keeps working after the key is
	// retired: password hashes peppered with it (their pepper key, a
	// one-way derivation, is kept; password.PepperPurpose). It does not
	// hold a retirement back.
	Kept bool
	// Grant is the ID of the live grant that derives from the key, for a
	// reference that is one.
	Grant string
}

// ReferencedError is Retire's refusal: the key is still referenced, and
// nothing was changed.
type ReferencedError struct {
	ID         keyring.KeyID
	References []Reference
}

func (e *ReferencedError) Error() string {
	return fmt.Sprintf("lifecycle: key %v is still referenced (%d places); nothing was changed", e.ID, len(e.References))
}

// ErrPrimary is Retire's refusal of the primary key.
var ErrPrimary = errors.New("lifecycle: the primary key cannot be retired: rotate first")

// Retire removes key id from kr for good, once nothing in any of dbs
// needs its material: no value of a column a ledger records is sealed
// under it, no value of any other column that can hold a ciphertext
// either ([Sweep]: the ledger's columns are not trusted to be complete),
// and no subject key is wrapped under it. Otherwise it returns a
// *ReferencedError naming each place and changes nothing. Password hashes
// peppered with it do not hold it back: retiring keeps the key's pepper
// key (HKDF output, which opens no value and unwraps no subject key), so
// they keep verifying, and users who never log in again do not keep a key
// alive; Retire returns those references (Kept). It records the key as
// retired in every ledger, then removes its material from the keyring
// file. Every database the keyring serves must be given.
func Retire(ctx context.Context, kr *keyring.Keyring, dbs []Database, id keyring.KeyID) (kept []Reference, err error) {
	if _, ok := kr.Lookup(id); !ok {
		return nil, &keyring.KeyError{ID: id, Err: keyring.ErrUnknownKey}
	}
	if kr.Primary().ID == id {
		return nil, ErrPrimary
	}
	if err := check(ctx, kr, dbs); err != nil {
		return nil, err
	}
	var refs []Reference
	for _, d := range dbs {
		found, err := References(ctx, kr, d, id)
		if err != nil {
			return nil, inDB(d.Name, err)
		}
		for _, r := range found {
			if r.Kept {
				kept = append(kept, r)
			} else {
				refs = append(refs, r)
			}
		}
	}
	if len(refs) > 0 {
		return nil, &ReferencedError{ID: id, References: refs}
	}
	for _, d := range dbs {
		if err := d.ledger().Retire(ctx, kr, id); err != nil {
			return nil, inDB(d.Name, fmt.Errorf("recording the retirement: %w", err))
		}
	}
	if err := keyring.NewManager(kr).RemoveKeeping(ctx, id, password.PepperPurpose); err != nil {
		return nil, fmt.Errorf("lifecycle: removing %v from the keyring: %w", id, err)
	}
	return kept, nil
}

// References lists what in d still uses keyring key id: values of
// recorded columns and of every other column that can hold one ([Sweep]),
// peppers of recorded password-hash columns, and wrapped subject keys.
func References(ctx context.Context, kr *keyring.Keyring, d Database, id keyring.KeyID) ([]Reference, error) {
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil {
		return nil, err
	}
	return referencesIn(ctx, kr, d, st, id, true)
}

// referencesIn is References with the ledger's state already read; with
// tombstones, the tombstones MAC'd under the key's integrity epoch count
// too (a recovery asks what a retired key made unreadable: values and
// keys, not tombstones, which it writes again).
func referencesIn(ctx context.Context, kr *keyring.Keyring, d Database, st *ledger.State, id keyring.KeyID, tombstones bool) ([]Reference, error) {
	var out []Reference
	add := func(format string, args ...any) {
		out = append(out, Reference{DB: d.Name, What: fmt.Sprintf(format, args...)})
	}
	if st != nil {
		for _, g := range st.LiveGrants(id) {
			add("grant %s (%v, issued %s) derives from it: revoke it first (ward grant revoke)", g.ID, g.Scopes, g.Issued.Format(time.DateOnly))
			out[len(out)-1].Grant = g.ID
		}
		for _, x := range st.IndexesAt(id) {
			add("blind index %s of %s.%s (column %s) is computed under its integrity epoch: its stored values would match nothing once the key is gone; keep the key until the index is re-keyed (Reindex, 'ward keyring reindex'; it needs a spare column)", x.Name, x.Table, x.Column, x.Index)
		}
		for _, c := range st.Columns {
			n, err := columnReferences(ctx, kr, d, c, id)
			if err != nil {
				return nil, err
			}
			switch {
			case n > 0 && c.Kind == ledger.KindPasswordHash:
				add("%d password hashes in %s.%s are peppered with it", n, c.Table, c.Column)
				out[len(out)-1].Kept = true
			case n > 0:
				add("%d values in %s.%s are sealed under it", n, c.Table, c.Column)
			}
		}
	}
	swept, err := Sweep(ctx, d, st, id)
	if err != nil {
		return nil, err
	}
	for _, c := range swept {
		add("%d values in %s are sealed under it, a column the ledger does not record: re-seal it (ward reseal --table --column …, which records it), or record it (ledger.Ledger.RecordColumns) and rotate", c.Values, c.Name)
	}
	if st != nil && tombstones {
		at, err := macsAt(ctx, d, st, id)
		if err != nil {
			return nil, err
		}
		for _, c := range slices.Sorted(maps.Keys(at)) {
			add("%d row MACs in %s name its integrity epoch: a rotation's re-MAC pass (lifecycle.RemacRows) moves them", at[c], c)
		}
	}
	stores, err := Stores(ctx, kr, d)
	if err != nil {
		return nil, err
	}
	for _, s := range stores {
		c, err := s.Census(ctx)
		if err != nil {
			return nil, err
		}
		if n := c.ByKey[id]; n > 0 {
			add("%d subject keys of %s are wrapped under it", n, s.Namespace())
		}
		if !tombstones {
			continue
		}
		n, err := s.TombstonesAt(ctx, id)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			add("%d tombstones of %s are MAC'd under its integrity epoch (or as v1): a rotation or ward subject reseal moves them", n, s.Namespace())
		}
	}
	return out, nil
}

// columnReferences counts what in one recorded column uses id.
func columnReferences(ctx context.Context, kr *keyring.Keyring, d Database, c ledger.Column, id keyring.KeyID) (int, error) {
	if c.Kind == ledger.KindPasswordHash {
		return peppered(ctx, d, c, id)
	}
	col, err := OpenColumn(ctx, kr, d, c)
	if err != nil {
		return 0, err
	}
	census, err := (&reseal.Job{DB: d.DB, Dialect: d.Dialect, Column: col, Key: c.Key}).Count(ctx)
	if err != nil {
		return 0, err
	}
	return int(census.PerKey[id]), nil
}

// peppered counts the hashes of a password-hash column peppered with id.
func peppered(ctx context.Context, d Database, c ledger.Column, id keyring.KeyID) (int, error) {
	t, err := d.Dialect.Quote(c.Table)
	if err != nil {
		return 0, err
	}
	col, err := d.Dialect.Quote(c.Column)
	if err != nil {
		return 0, err
	}
	rows, err := d.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s IS NOT NULL`, col, t, col))
	if err != nil {
		return 0, fmt.Errorf("reading %s.%s: %w", c.Table, c.Column, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return 0, err
		}
		if got, ok, err := password.PepperOf(h); err == nil && ok && got == id {
			n++
		}
	}
	return n, rows.Err()
}
