// Package keyring holds versioned symmetric keys and seals values with them.
//
// A [Keyring] has exactly one primary key, which seals new values, and any
// number of decrypt-only or disabled keys kept for existing data. Every
// ciphertext starts with a version byte and the ID of its key (see
// [ParseHeader] and FORMAT.md), so keys can rotate without re-encrypting
// everything at once. Values are bound to a context (for databases: table,
// column and row) that must be presented again to open them.
//
// Keyrings are stored sealed under a key-encryption key (see [Save] and
// [Load]); this package never writes key material in plaintext.
//
// Most users should not seal values directly but use package field, which
// builds the context from where a value lives and plugs into database/sql.
package keyring

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Keyring is a set of versioned keys with exactly one primary. Sealing and
// opening are safe for concurrent use and lock-free; management operations
// (Add, Promote, …) are serialised and publish a new snapshot atomically, so
// a value sealed during a rotation is always openable afterwards.
type Keyring struct {
	mu       sync.Mutex // serialises writers
	snap     atomic.Pointer[snapshot]
	rootSalt [32]byte // public salt for Derive, stored with the keyring
	root     [32]byte // secret derivation root for Derive
}

type snapshot struct {
	keys    []*key // in creation order
	byID    map[KeyID]*key
	primary *key
}

// New creates a keyring with one fresh primary key of the given algorithm.
func New(alg Algorithm) (*Keyring, error) {
	kr := &Keyring{}
	rand.Read(kr.root[:])
	rand.Read(kr.rootSalt[:])
	kr.snap.Store(&snapshot{byID: map[KeyID]*key{}})
	if _, err := kr.add(alg, Primary, time.Now()); err != nil {
		return nil, err
	}
	return kr, nil
}

func (kr *Keyring) load() *snapshot { return kr.snap.Load() }

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

// Add creates a new decrypt-only key and returns its ID. Distribute the
// keyring to every reader before promoting the key, so no reader meets a
// ciphertext under a key it does not have yet.
func (kr *Keyring) Add(alg Algorithm) (KeyID, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.add(alg, DecryptOnly, time.Now())
}

// Rotate adds a new key and promotes it in one step, returning its ID. The
// previous primary becomes decrypt-only.
func (kr *Keyring) Rotate(alg Algorithm) (KeyID, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	id, err := kr.add(alg, DecryptOnly, time.Now())
	if err != nil {
		return 0, err
	}
	return id, kr.setState(id, Primary)
}

// Promote makes the key primary; the previous primary becomes decrypt-only.
// A disabled key cannot be promoted without being enabled first.
func (kr *Keyring) Promote(id KeyID) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.setState(id, Primary)
}

// Demote moves a decrypt-only key down to disabled. The primary key cannot
// be demoted ([ErrPrimaryKey]): promote its successor instead, which
// demotes it to decrypt-only.
func (kr *Keyring) Demote(id KeyID) error { return kr.Disable(id) }

// Disable stops a key from opening values. The primary key cannot be
// disabled ([ErrPrimaryKey]).
func (kr *Keyring) Disable(id KeyID) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.setState(id, Disabled)
}

// Enable makes a disabled key decrypt-only again.
func (kr *Keyring) Enable(id KeyID) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.setState(id, DecryptOnly)
}

// add appends a key; the caller holds mu (or owns kr exclusively).
func (kr *Keyring) add(alg Algorithm, st State, created time.Time) (KeyID, error) {
	if !alg.valid() {
		return 0, fmt.Errorf("keyring: unsupported algorithm %v", alg)
	}
	material := make([]byte, alg.KeySize())
	rand.Read(material)
	old := kr.load()
	var id KeyID
	for id == 0 || old.byID[id] != nil {
		var b [4]byte
		rand.Read(b[:])
		id = KeyID(binary.BigEndian.Uint32(b[:]))
	}
	k, err := newKey(KeyInfo{ID: id, Algorithm: alg, State: st, Created: created.UTC()}, material)
	if err != nil {
		return 0, err
	}
	next := old.clone()
	next.keys = append(next.keys, k)
	next.byID[id] = k
	if st == Primary {
		next.primary = k
	}
	kr.snap.Store(next)
	return id, nil
}

func newKey(info KeyInfo, material []byte) (*key, error) {
	a, err := info.Algorithm.newAEAD(material)
	if err != nil {
		return nil, err
	}
	return &key{KeyInfo: info, material: material, aead: a}, nil
}

// setState changes one key's state, keeping exactly one primary; the caller
// holds mu.
func (kr *Keyring) setState(id KeyID, st State) error {
	old := kr.load()
	cur, ok := old.byID[id]
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
	next := old.clone()
	replace := func(k *key, st State) *key {
		nk := *k
		nk.State = st
		i := slices.Index(next.keys, k)
		next.keys[i] = &nk
		next.byID[nk.ID] = &nk
		return &nk
	}
	if st == Primary {
		replace(old.primary, DecryptOnly)
		next.primary = replace(cur, Primary)
	} else {
		replace(cur, st)
	}
	kr.snap.Store(next)
	return nil
}

func (s *snapshot) clone() *snapshot {
	n := &snapshot{keys: slices.Clone(s.keys), byID: make(map[KeyID]*key, len(s.byID)+1), primary: s.primary}
	for id, k := range s.byID {
		n.byID[id] = k
	}
	return n
}

// adPool holds scratch buffers for associated data, so that sealing and
// opening allocate only their output.
var adPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Seal encrypts plaintext under the primary key, bound to context, and
// returns a v1 binary ciphertext. The same context must be passed to Open.
func (kr *Keyring) Seal(plaintext, context []byte) ([]byte, error) {
	return kr.AppendSeal(nil, plaintext, context)
}

// AppendSeal is like Seal but appends the ciphertext to dst.
func (kr *Keyring) AppendSeal(dst, plaintext, context []byte) ([]byte, error) {
	k := kr.load().primary
	if k == nil {
		return nil, ErrNoPrimary
	}
	ns := k.Algorithm.NonceSize()
	total := HeaderSize + ns + len(plaintext) + TagSize
	ret, out := sliceForAppend(dst, total)
	// The associated data is header || context. It is assembled in a pooled
	// buffer first, and the checksum taken over that copy, so that context
	// does not escape and callers can pass stack buffers.
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], make([]byte, HeaderSize)...), context...)
	putHeader(out, k.Algorithm, k.ID, crc32.Checksum(ad[HeaderSize:], castagnoli))
	copy(ad, out[:HeaderSize])
	nonce := out[HeaderSize : HeaderSize+ns]
	rand.Read(nonce)
	k.aead.Seal(out[:HeaderSize+ns], nonce, plaintext, ad)
	*adp = ad
	adPool.Put(adp)
	return ret, nil
}

// Open authenticates and decrypts a v1 binary ciphertext sealed for
// context. On any error it returns nil plaintext.
func (kr *Keyring) Open(ciphertext, context []byte) ([]byte, error) {
	return kr.AppendOpen(nil, ciphertext, context)
}

// AppendOpen is like Open but appends the plaintext to dst. On error dst is
// returned unchanged.
func (kr *Keyring) AppendOpen(dst, ciphertext, context []byte) ([]byte, error) {
	h, err := ParseHeader(ciphertext)
	if err != nil {
		return dst, err
	}
	k, ok := kr.load().byID[h.KeyID]
	if !ok {
		return dst, &KeyError{ID: h.KeyID, Err: ErrUnknownKey}
	}
	if k.State == Disabled {
		return dst, &KeyError{ID: h.KeyID, Err: ErrKeyDisabled}
	}
	if k.Algorithm != h.Algorithm {
		return dst, fmt.Errorf("%w: algorithm %v does not match key %v (%v)", ErrMalformed, h.Algorithm, k.ID, k.Algorithm)
	}
	ns := k.Algorithm.NonceSize()
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], ciphertext[:HeaderSize]...), context...)
	if crc32.Checksum(ad[HeaderSize:], castagnoli) != h.ContextCheck {
		*adp = ad
		adPool.Put(adp)
		return dst, ErrWrongContext
	}
	out, err := k.aead.Open(dst, ciphertext[HeaderSize:HeaderSize+ns], ciphertext[HeaderSize+ns:], ad)
	*adp = ad
	adPool.Put(adp)
	if err != nil {
		return dst, ErrAuthentication
	}
	return out, nil
}

// Derive returns length bytes of key material for a named purpose, derived
// with HKDF-SHA-256 from a secret root that is stored with the keyring and
// does not change when data keys rotate. Package field uses it for
// blind-index keys. The result is secret.
func (kr *Keyring) Derive(purpose string, length int) ([]byte, error) {
	return hkdf.Key(sha256.New, kr.root[:], kr.rootSalt[:], "ward keyring derive v1\x00"+purpose, length)
}

// sliceForAppend extends in by n bytes, returning the whole slice and the
// new tail (the same helper as in crypto/cipher).
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	tail = head[len(in):]
	return
}

// DeriveFromKey returns length bytes derived with HKDF-SHA-256 from the
// material of the key with the given ID, for a named purpose. Unlike
// Derive, the result changes when the key rotates, and the key ID recorded
// next to its use tells which key to derive from later (package password
// uses it for peppers). Disabled keys return [ErrKeyDisabled]. The result
// is secret.
func (kr *Keyring) DeriveFromKey(id KeyID, purpose string, length int) ([]byte, error) {
	k, ok := kr.load().byID[id]
	if !ok {
		return nil, &KeyError{ID: id, Err: ErrUnknownKey}
	}
	if k.State == Disabled {
		return nil, &KeyError{ID: id, Err: ErrKeyDisabled}
	}
	return hkdf.Key(sha256.New, k.material, nil, "ward keyring key-derive v1\x00"+purpose, length)
}
