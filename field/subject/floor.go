package subject

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/ledger"
)

// A per-subject grant's holder keeps, for each subject key version the
// grant opened, what opens that version's values. Its revocation gives
// every subject of the namespace a new version (RotateAll), and raises the
// namespace's key floor in the ledger (ledger.Ledger.RaiseKeyFloor): the
// store then seals only under versions at or above the floor, and gives a
// subject whose newest version is below it a new one first. A database
// writer who deletes the versions the revocation created, or restores the
// key table from before it, makes the store create yet another version,
// never seal under one the holder kept: the floor is authenticated and
// anchored (a writer cannot lower it), and a version is bound to its key
// by the wrap's associated data (a writer cannot relabel an old key).
// The store reads the floor with the ledger (Config.Ledger; without one it
// has none), at most once per TTL, as it verifies the ledger: within the
// TTL after a raise a process may still seal under an older version,
// which the revocation's wait (--subject-ttl) and re-seal cover.
//
// Versions are 32-bit. Until the first raise, a first key's version is
// random in [1, 2^31) and each rotation adds one; raise k (1 to 255) sets
// the floor to 2^31 + k·2^23, and first keys are drawn at random in the
// first half of that band.

// maxFloorRaises is how many revocations may raise a namespace's floor.
const maxFloorRaises = 255

// KeyFloor is the lowest key version a store seals under after k raises of
// its namespace's floor (ledger.KeyFloorCounter).
func KeyFloor(k uint64) (uint32, error) {
	if k == 0 {
		return 0, nil
	}
	if k > maxFloorRaises {
		return 0, fmt.Errorf("subject: the key floor was raised %d times, past the %d versions have room for", k, maxFloorRaises)
	}
	return 1<<31 + uint32(k)<<23, nil
}

// setFloor takes the namespace's floor from a verified ledger state.
func (s *Store) setFloor(st *ledger.State) error {
	f, err := KeyFloor(st.Counters[ledger.KeyFloorCounter(s.cfg.Namespace)])
	if err != nil {
		return fmt.Errorf("subject: %s: %w", s.cfg.Namespace, err)
	}
	s.floor.Store(f)
	return nil
}

// readFloor verifies the ledger now and takes the floor from it (a job
// that creates versions: they must be above a floor raised a moment ago).
func (s *Store) readFloor(ctx context.Context) error {
	if s.cfg.Ledger == nil || s.cfg.Verified != nil {
		return nil
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err != nil || st == nil {
		return err
	}
	return s.setFloor(st)
}

// firstVersion draws a subject's first key version: random (a value under
// a deleted key then reports the key missing, not a wrong key), above the
// floor, with room to rotate.
func (s *Store) firstVersion() uint32 {
	r := randomVersion() // in [1, 2^31)
	if f := s.floor.Load(); f != 0 {
		return f + r>>9 | 1 // in [f, f + 2^22): room to rotate within the band
	}
	return r
}

// nextVersion is the version a subject whose newest is newest gets next:
// one more, or, under the floor, a fresh one above it.
func (s *Store) nextVersion(newest uint32) uint32 {
	if f := s.floor.Load(); newest+1 < f {
		return s.firstVersion()
	}
	return newest + 1
}
