package keyring

import (
	"context"

	"github.com/wardlab/ward/kms"
)

// A Manager changes a keyring's keys — the lifecycle, kept apart from the
// keyring's use as tink keeps keyset.Manager apart from its primitives. A
// keyring loaded from a file saves each change there first (locked,
// compare-and-swap, fsync, rename): if saving fails, nothing changes in
// the process either, so no value is ever sealed under a key that exists
// nowhere on disk.
//
// A Manager changes one keyring file and knows nothing of the processes
// that share it. A fleet rotates with package lifecycle (lifecycle.Rotate
// adds a key, waits until every process holds it, promotes it, waits
// again, then re-seals), and retires with lifecycle.Retire, which proves
// no value still needs the key.
type Manager struct{ kr *Keyring }

// NewManager returns a manager of kr's keys.
func NewManager(kr *Keyring) *Manager { return &Manager{kr: kr} }

// Keyring returns the keyring the manager changes.
func (m *Manager) Keyring() *Keyring { return m.kr }

// Add creates a new decrypt-only key and returns its ID. Distribute the
// keyring to every reader before promoting the key, so no reader meets a
// ciphertext under a key it does not have yet.
func (m *Manager) Add(ctx context.Context, alg Algorithm) (KeyID, error) {
	return m.kr.core().Add(ctx, alg)
}

// AddPrimary adds a new key and promotes it in one step, returning its ID;
// the previous primary becomes decrypt-only. It is safe for a keyring one
// process uses; in a fleet, a process that has not loaded the new key
// meets values it cannot open until it re-reads the file. Fleets rotate
// with lifecycle.Rotate (ward keyring rotate), which adds, waits and
// promotes.
func (m *Manager) AddPrimary(ctx context.Context, alg Algorithm) (KeyID, error) {
	return m.kr.core().Rotate(ctx, alg)
}

// Promote makes the key primary; the previous primary becomes decrypt-only.
// A disabled key cannot be promoted without being enabled first.
func (m *Manager) Promote(ctx context.Context, id KeyID) error {
	return m.kr.core().Promote(ctx, id)
}

// Disable stops a key from opening values; its material is kept so that it
// can be enabled again. The primary key cannot be disabled
// ([ErrPrimaryKey]): promote its successor first.
func (m *Manager) Disable(ctx context.Context, id KeyID) error {
	return m.kr.core().Disable(ctx, id)
}

// Enable makes a disabled key decrypt-only again.
func (m *Manager) Enable(ctx context.Context, id KeyID) error {
	return m.kr.core().Enable(ctx, id)
}

// Remove deletes a key and its material from the keyring for good: values
// and wrapped subject keys sealed under it never open again with this
// keyring, nor with any copy of the file saved afterwards. It is the last
// step of retiring a key (lifecycle.Retire, ward keyring retire), after a
// census found nothing under it; the primary key cannot be removed
// ([ErrPrimaryKey]). Copies of the file saved before still hold the key:
// SECURITY.md states that window.
func (m *Manager) Remove(ctx context.Context, id KeyID) error {
	return m.kr.core().RemoveKeeping(ctx, id)
}

// RemoveKeeping is Remove, keeping for each purpose given the 32-byte
// derivation [Keyring.DeriveFromKey](id, purpose, 32) returned: after it,
// that call still returns the same bytes, while the key's material — which
// opens values and unwraps subject keys — is gone from the keyring and its
// file. The key ID is never reused.
func (m *Manager) RemoveKeeping(ctx context.Context, id KeyID, purposes ...string) error {
	return m.kr.core().RemoveKeeping(ctx, id, purposes...)
}

// Rewrap seals the keyring's file under another key service (a new master
// key, or KMS key rotation) without touching the data keys. Later changes
// are saved under to.
func (m *Manager) Rewrap(ctx context.Context, to kms.KeyService) error {
	return m.kr.core().Rewrap(ctx, to)
}
