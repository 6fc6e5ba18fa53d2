// Package keycore is the mechanism under package keyring, which is its
// face (as crypto/mlkem is the face of crypto/internal/fips140/mlkem):
// key material and its snapshots, ciphertext v1 to v4 and their headers,
// the keyring and grant file formats, subject keys and their wrapping,
// and the state MACs and anchors the ledger rests on. FORMAT.md, at the
// repository's root, describes every format.
//
// Applications use package keyring. ward's control-plane packages (the
// ledger, the field layer's fast path, subject stores, jobs) use this
// package's typed functions: package keyring defines its Keyring,
// SubjectKey, Scope and Grant as this package's types, so a
// *keyring.Keyring converts to a *keycore.Keyring at no cost
// ((*keycore.Keyring)(kr)), checked by the compiler; nothing here imports
// package keyring.
//
// Error messages keep the prefix "keyring:", the package users see.
package keycore

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Keyring is a set of versioned keys with exactly one primary. Sealing and
// opening are safe for concurrent use and lock-free; changes (Add, Rotate,
// …) are serialised and publish a new snapshot atomically, so a value
// sealed during a rotation is always openable afterwards. Printing a
// Keyring shows its ID, generation and key IDs, never key material.
type Keyring struct {
	mu       sync.Mutex // serialises changes
	snap     atomic.Pointer[snapshot]
	rootSalt [32]byte // salt for Derive, stored with the keyring
	root     [32]byte // secret derivation root for Derive
	id       string   // public ID derived from rootSalt
	file     *file    // nil for a keyring that lives in memory only

	plainScope atomic.Pointer[Scope] // the empty scope's (see unscoped)

	watchEvery       atomic.Int64  // Watch's interval (ns), 0 when not watching
	lastFailedReload atomic.Int64  // Unix ns of the last re-read for an unknown key ID that failed
	unknownMu        sync.Mutex    // guards unknownWait
	unknownWait      chan struct{} // closed when the re-read in flight ends; nil when none is
	unknownReloads   atomic.Uint64 // re-reads for unknown key IDs, for tests

	usage usages // seals per key not yet reported (usage.go)
}

// snapshot is one immutable state of a keyring.
type snapshot struct {
	keys       []*key // in creation order
	byID       map[KeyID]*key
	primary    *key
	generation uint64            // incremented by every saved change
	stateKeys  []stateKey        // by epoch, oldest first; see anchor.go
	anchors    map[string]Anchor // by database ID; see anchor.go
	removed    []KeyID           // keys removed for good; see retained.go
	retained   []retained        // derivations kept for removed keys
}

// New creates a keyring that lives in memory only, with one fresh primary
// key of the given algorithm. To keep it, use [Create] instead.
func New(alg Algorithm) (*Keyring, error) {
	kr := newEmpty()
	s := &snapshot{byID: map[KeyID]*key{}, anchors: map[string]Anchor{}}
	if _, err := s.add(alg, Primary, time.Now()); err != nil {
		return nil, err
	}
	// Generation 1 and its state key, as a file Create writes: state is
	// never MAC'd under the root alone (epoch 0).
	s.generation = 1
	s.addStateKey()
	kr.publish(s)
	return kr, nil
}

func newEmpty() *Keyring {
	kr := &Keyring{}
	rand.Read(kr.root[:])
	rand.Read(kr.rootSalt[:])
	kr.id = keyringID(kr.rootSalt)
	return kr
}

// keyringID names a keyring publicly and stably: it does not change when
// keys rotate or the file is rewrapped.
func keyringID(salt [32]byte) string {
	sum := sha256.Sum256(append([]byte("ward keyring id v1\x00"), salt[:]...))
	return "kr-" + hex.EncodeToString(sum[:8])
}

func (kr *Keyring) load() *snapshot { return kr.snap.Load() }

// ID returns the keyring's public identifier, "kr-" and 16 hex digits. It
// stays the same across rotations, saves and rewraps, so a database can
// record which keyring its values belong to.
func (kr *Keyring) ID() string { return kr.id }

// Generation counts the saved changes of the keyring's file: 0 for a file
// written before format v2, then one more with every change. A database
// can record the highest generation it has seen to detect a file rolled
// back to an older copy.
func (kr *Keyring) Generation() uint64 { return kr.load().generation }

// Keys lists the public information of every key, in creation order.
func (kr *Keyring) Keys() []KeyInfo {
	s := kr.load()
	out := make([]KeyInfo, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.KeyInfo
	}
	return out
}

// Primary returns the public information of the primary key.
func (kr *Keyring) Primary() KeyInfo { return kr.load().primary.KeyInfo }

// Lookup returns the public information of the key with the given ID.
func (kr *Keyring) Lookup(id KeyID) (KeyInfo, bool) {
	k, ok := kr.load().byID[id]
	if !ok {
		return KeyInfo{}, false
	}
	return k.KeyInfo, true
}

// String describes the keyring by its public facts only.
func (kr *Keyring) String() string {
	s := kr.load()
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.ID.String() + "(" + k.State.String() + ")"
	}
	return fmt.Sprintf("Keyring(%s, generation %d, keys %v)", kr.id, s.generation, ids)
}

// GoString is String: a keyring never prints its material.
func (kr *Keyring) GoString() string { return kr.String() }

// Format prints String whatever the verb, so that %v, %+v, %#v and %x never
// reveal the derivation root or key material.
func (kr *Keyring) Format(f fmt.State, _ rune) { f.Write([]byte(kr.String())) }

// Add creates a new decrypt-only key and returns its ID. Distribute the
// keyring to every reader before promoting the key, so no reader meets a
// ciphertext under a key it does not have yet. A keyring loaded from a file
// saves the change first (see [Keyring.update]).
func (kr *Keyring) Add(ctx context.Context, alg Algorithm) (KeyID, error) {
	var id KeyID
	err := kr.update(ctx, func(next *snapshot) (err error) {
		id, err = next.add(alg, DecryptOnly, time.Now())
		return err
	})
	return id, err
}

// Rotate adds a new key and promotes it in one step, returning its ID. The
// previous primary becomes decrypt-only. With several readers, prefer Add,
// distribute, then Promote.
func (kr *Keyring) Rotate(ctx context.Context, alg Algorithm) (KeyID, error) {
	var id KeyID
	err := kr.update(ctx, func(next *snapshot) (err error) {
		if id, err = next.add(alg, DecryptOnly, time.Now()); err != nil {
			return err
		}
		return next.setState(id, Primary)
	})
	return id, err
}

// Promote makes the key primary; the previous primary becomes decrypt-only.
// A disabled key cannot be promoted without being enabled first.
func (kr *Keyring) Promote(ctx context.Context, id KeyID) error {
	return kr.update(ctx, func(next *snapshot) error { return next.setState(id, Primary) })
}

// Disable stops a key from opening values; its material is kept so that it
// can be enabled again. The primary key cannot be disabled
// ([ErrPrimaryKey]): promote its successor first.
func (kr *Keyring) Disable(ctx context.Context, id KeyID) error {
	return kr.update(ctx, func(next *snapshot) error { return next.setState(id, Disabled) })
}

// Enable makes a disabled key decrypt-only again.
func (kr *Keyring) Enable(ctx context.Context, id KeyID) error {
	return kr.update(ctx, func(next *snapshot) error { return next.setState(id, DecryptOnly) })
}

// Remove deletes a key and its material from the keyring for good: values
// and wrapped subject keys sealed under it never open again with this
// keyring, nor with any copy of the file saved afterwards. It is the last
// step of retiring a key (ward keyring retire), after a census found
// nothing under it; the primary key cannot be removed ([ErrPrimaryKey]).
// Copies of the file saved before still hold the key: SECURITY.md states
// that window.
func (kr *Keyring) Remove(ctx context.Context, id KeyID) error {
	return kr.RemoveKeeping(ctx, id)
}

// update applies change to a copy of the current state and publishes the
// copy. A keyring loaded from a file first saves the copy (locked,
// compare-and-swap, fsync, rename): if saving fails, nothing changes in the
// process either, so no value is ever sealed under a key that exists
// nowhere on disk.
//
// A save refused because another process saved the file first
// ([*StaleError]) is retried on the file's new content only when that
// process moved nothing but anchors (every forget and ledger write of a
// service saves its database's anchor): the keys, their states and the
// state keys are as this process holds them, so the change means the same
// there. Any other change (another operator's rotation) is a conflict, and
// the error is returned.
func (kr *Keyring) update(ctx context.Context, change func(next *snapshot) error) error {
	return kr.retryStale(ctx, func() error { return kr.updateOnce(ctx, change) },
		func(s *snapshot) bool { return sameKeys(s, kr.load()) })
}

// sameKeys reports whether two snapshots hold the same keys in the same
// states, the same primary, state keys and removed keys.
func sameKeys(a, b *snapshot) bool {
	if len(a.keys) != len(b.keys) || len(a.stateKeys) != len(b.stateKeys) || !slices.Equal(a.removed, b.removed) ||
		(a.primary == nil) != (b.primary == nil) || a.primary != nil && a.primary.ID != b.primary.ID {
		return false
	}
	for i, k := range a.keys {
		o := b.keys[i]
		if k.ID != o.ID || k.State != o.State || k.Algorithm != o.Algorithm {
			return false
		}
	}
	for i, s := range a.stateKeys {
		if s.epoch != b.stateKeys[i].epoch {
			return false
		}
	}
	return true
}

// updateOnce is one round of update.
func (kr *Keyring) updateOnce(ctx context.Context, change func(next *snapshot) error) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	next := kr.load().clone()
	if err := change(next); err != nil {
		return err
	}
	next.generation++
	next.addStateKey()
	if kr.file != nil {
		if err := kr.file.save(ctx, kr, next, kr.file.ks); err != nil {
			return err
		}
	}
	kr.publish(next)
	return nil
}

// add appends a fresh key.
func (s *snapshot) add(alg Algorithm, st State, created time.Time) (KeyID, error) {
	if !alg.valid() {
		return 0, fmt.Errorf("keyring: unsupported algorithm %v", alg)
	}
	material := make([]byte, alg.KeySize())
	rand.Read(material)
	var id KeyID
	for id == 0 || s.byID[id] != nil || slices.Contains(s.removed, id) { // a removed key's ID is never reused
		var b [4]byte
		rand.Read(b[:])
		id = KeyID(binary.BigEndian.Uint32(b[:]))
	}
	k, err := newKey(KeyInfo{ID: id, Algorithm: alg, State: st, Created: created.UTC()}, material)
	if err != nil {
		return 0, err
	}
	s.keys = append(s.keys, k)
	s.byID[id] = k
	if st == Primary {
		s.primary = k
	}
	return id, nil
}

// setState changes one key's state, keeping exactly one primary.
func (s *snapshot) setState(id KeyID, st State) error {
	cur, ok := s.byID[id]
	if !ok {
		return &KeyError{ID: id, Err: ErrUnknownKey}
	}
	if cur.State == st {
		return nil
	}
	if cur.State == Primary {
		return &KeyError{ID: id, Err: ErrPrimaryKey}
	}
	if st == Primary && cur.State == Disabled {
		return &KeyError{ID: id, Err: ErrKeyDisabled}
	}
	replace := func(k *key, st State) *key {
		nk := k.withState(st)
		s.keys[slices.Index(s.keys, k)] = nk
		s.byID[nk.ID] = nk
		return nk
	}
	if st == Primary {
		replace(s.primary, DecryptOnly)
		s.primary = replace(cur, Primary)
	} else {
		replace(cur, st)
	}
	return nil
}

func (s *snapshot) clone() *snapshot {
	n := &snapshot{keys: slices.Clone(s.keys), byID: make(map[KeyID]*key, len(s.byID)+1), primary: s.primary, generation: s.generation,
		stateKeys: slices.Clip(s.stateKeys), anchors: maps.Clone(s.anchors), removed: slices.Clip(s.removed), retained: slices.Clip(s.retained)}
	if n.anchors == nil {
		n.anchors = map[string]Anchor{}
	}
	for id, k := range s.byID {
		n.byID[id] = k
	}
	return n
}

// Derive returns length bytes of key material for a named purpose, derived
// with HKDF-SHA-256 from a secret root that is stored with the keyring and
// does not change when data keys rotate. Package field uses it for
// blind-index keys and row MACs. The result is secret.
func (kr *Keyring) Derive(purpose string, length int) ([]byte, error) {
	return hkdf.Key(sha256.New, kr.root[:], kr.rootSalt[:], "ward keyring derive v1\x00"+purpose, length)
}

// DeriveFromKey returns length bytes derived with HKDF-SHA-256 from the
// material of the key with the given ID, for a named purpose. Unlike
// Derive, the result changes when the key rotates, and the key ID recorded
// next to its use tells which key to derive from later (package password
// uses it for peppers). Disabled keys return [ErrKeyDisabled]. The result
// is secret.
func (kr *Keyring) DeriveFromKey(id KeyID, purpose string, length int) ([]byte, error) {
	s := kr.load()
	k, ok := s.byID[id]
	if !ok {
		return s.retainedFor(id, purpose, length)
	}
	if k.State == Disabled {
		return nil, &KeyError{ID: id, Err: ErrKeyDisabled}
	}
	return derive(k.material, purpose, length)
}
