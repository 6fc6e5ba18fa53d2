package keycore

import (
	"sync"
	"sync/atomic"
)

// Seals per key. AES-GCM with random 96-bit nonces is safe for about 2^32
// messages per key (NIST SP 800-38D §8.3: a nonce collision probability
// under 2^-32); ward counts how many values each keyring key has sealed
// so that an operator rotates in time (FORMAT.md, "Key usage").
//
// The count is an estimate that costs a seal one branch: a seal whose
// random nonce has the low 6 bits of its first byte zero (1 in 64, drawn
// independently of everything else) adds 64. It is unbiased, and at
// 2^30 seals its standard deviation is 0.02 %. v4 values count toward the
// keyring key their scope's key derives from (each scope's key has a
// bound of its own, so the sum is conservative); subject keys, one per
// user, are not counted.

// usageShift sets the sampling: one seal in 2^usageShift adds 2^usageShift.
const usageShift = 6

// usage counts one keyring key's seals not yet reported.
type usage struct{ n atomic.Uint64 }

// sealed counts a seal whose nonce starts with b.
func (u *usage) sealed(b byte) {
	if u != nil && b&(1<<usageShift-1) == 0 {
		u.n.Add(1 << usageShift)
	}
}

// usages holds a keyring's counters by key ID, kept across the snapshots
// a reload or a change publishes.
type usages struct{ m sync.Map } // KeyID → *usage

func (us *usages) of(id KeyID) *usage {
	if u, ok := us.m.Load(id); ok {
		return u.(*usage)
	}
	u, _ := us.m.LoadOrStore(id, new(usage))
	return u.(*usage)
}

// publish makes s the keyring's state, its keys counting into the
// keyring's counters.
func (kr *Keyring) publish(s *snapshot) {
	for _, k := range s.keys {
		if k.uses == nil {
			k.uses = kr.usage.of(k.ID)
		}
	}
	kr.snap.Store(s)
}

// TakeSeals returns how many values each key sealed since the last
// TakeSeals (an estimate; see above) and starts counting again from zero.
// A caller that cannot record them gives them back with ReturnSeals.
func (kr *Keyring) TakeSeals() map[KeyID]uint64 {
	out := map[KeyID]uint64{}
	kr.usage.m.Range(func(id, u any) bool {
		if n := u.(*usage).n.Swap(0); n > 0 {
			out[id.(KeyID)] = n
		}
		return true
	})
	return out
}

// ReturnSeals adds back counts TakeSeals gave that were not recorded.
func (kr *Keyring) ReturnSeals(counts map[KeyID]uint64) {
	for id, n := range counts {
		kr.usage.of(id).n.Add(n)
	}
}
