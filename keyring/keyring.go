// Package keyring holds versioned symmetric keys and seals values with them.
//
// A [Keyring] has exactly one primary key, which seals new values, and any
// number of decrypt-only or disabled keys kept for existing data. Every
// ciphertext starts with a version byte and the ID of its key (FORMAT.md),
// so keys can rotate without re-encrypting everything at once. Values are
// bound to associated data, ad in every signature (for databases: table,
// column, row and any bound columns: the field layer calls it the value's
// context), that must be presented again to open them.
//
// A keyring lives in a file sealed under a key service (package kms: a
// local master key or a KMS key); this package never writes key material in
// plaintext. [Create] makes a new file and [Load] opens one; [New] makes a
// keyring that lives in memory only. A [Keyring] is what an application
// uses: it seals, opens, derives, issues grants and follows its file. A
// [Manager] changes its keys (add, promote, disable, remove, re-wrap the
// file); a keyring loaded from a file saves every change durably, under an
// exclusive lock and only if the file is still the one it loaded, before
// the change takes effect in the process. A fleet of processes sharing a
// file rotates with package lifecycle, which waits for every process
// between the steps.
//
// Most users should not seal values directly but use package field, which
// builds the context from where a value lives and plugs into database/sql.
//
// This package is the face of ward's internal keycore package, which holds
// the mechanism (formats, key material, the state the ledger rests on).
package keyring

import (
	"context"
	"fmt"
	"time"

	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/kms"
)

// Keyring is a set of versioned keys with exactly one primary. Sealing and
// opening are safe for concurrent use and lock-free; changes (through a
// [Manager]) are serialised and publish a new snapshot atomically, so a
// value sealed during a rotation is always openable afterwards. Printing a
// Keyring shows its ID, generation and key IDs, never key material.
type Keyring keycore.Keyring

func (kr *Keyring) core() *keycore.Keyring { return (*keycore.Keyring)(kr) }

// ring returns the face of a core keyring, or nil.
func ring(k *keycore.Keyring, err error) (*Keyring, error) {
	if err != nil {
		return nil, err
	}
	return (*Keyring)(k), nil
}

// New creates a keyring that lives in memory only, with one fresh primary
// key of the given algorithm. To keep it, use [Create] instead.
func New(alg Algorithm) (*Keyring, error) { return ring(keycore.New(alg)) }

// Create makes a new keyring file at path with one primary key of alg,
// sealed under ks, and returns the keyring, which saves its changes there.
// It fails (with an error matching fs.ErrExist) if the file exists: it
// never replaces keys.
func Create(ctx context.Context, path string, ks kms.KeyService, alg Algorithm) (*Keyring, error) {
	return ring(keycore.Create(ctx, path, ks, alg))
}

// Load opens the keyring file at path, sealed under ks. The keyring saves
// its changes back to the file. A missing file is an error (matching
// fs.ErrNotExist), never a new keyring: create one with [Create].
func Load(ctx context.Context, path string, ks kms.KeyService) (*Keyring, error) {
	return ring(keycore.Load(ctx, path, ks))
}

// Unmarshal opens a keyring sealed by [Keyring.Marshal], or written in
// format v1. It returns [ErrWrongWrapper] when data names another wrapping
// key than ks, [ErrCorruptKeyring] when it fails authentication or does
// not parse, and a [VersionError] for an unknown format. The keyring lives
// in memory; use [Load] for one that saves its changes.
func Unmarshal(ctx context.Context, data []byte, ks kms.KeyService) (*Keyring, error) {
	return ring(keycore.Unmarshal(ctx, data, ks))
}

// ID returns the keyring's public identifier, "kr-" and 16 hex digits. It
// stays the same across rotations, saves and rewraps, so a database can
// record which keyring its values belong to.
func (kr *Keyring) ID() string { return kr.core().ID() }

// Path returns the file a keyring was loaded from or created in, or ""
// for a keyring that lives in memory.
func (kr *Keyring) Path() string { return kr.core().Path() }

// Generation counts the saved changes of the keyring's file: 0 for a file
// written before format v2, then one more with every change. A database
// can record the highest generation it has seen to detect a file rolled
// back to an older copy.
func (kr *Keyring) Generation() uint64 { return kr.core().Generation() }

// Keys lists the public information of every key, in creation order.
func (kr *Keyring) Keys() []KeyInfo { return kr.core().Keys() }

// Primary returns the public information of the primary key.
func (kr *Keyring) Primary() KeyInfo { return kr.core().Primary() }

// Lookup returns the public information of the key with the given ID.
func (kr *Keyring) Lookup(id KeyID) (KeyInfo, bool) { return kr.core().Lookup(id) }

// Removed lists the key IDs removed from the keyring (retired), oldest
// first: their material is gone; [Keyring.DeriveFromKey] answers for them
// only with what [Manager.RemoveKeeping] kept.
func (kr *Keyring) Removed() []KeyID { return kr.core().Removed() }

// String describes the keyring by its public facts only.
func (kr *Keyring) String() string { return kr.core().String() }

// GoString is String: a keyring never prints its material.
func (kr *Keyring) GoString() string { return kr.core().String() }

// Format prints String whatever the verb, so that %v, %+v, %#v and %x never
// reveal the derivation root or key material.
func (kr *Keyring) Format(f fmt.State, _ rune) { f.Write([]byte(kr.String())) }

// Seal encrypts plaintext under the primary key, bound to ad (associated
// data: for a database value, where it lives), and
// returns a binary ciphertext: format v3, or in the FIPS 140-3 mode
// (crypto/fips140.Enabled), format v4 of the empty scope, whose nonce the
// module generates. The same ad must be passed to Open.
func (kr *Keyring) Seal(plaintext, ad []byte) ([]byte, error) {
	return kr.core().AppendSeal(nil, plaintext, ad)
}

// AppendSeal is like Seal but appends the ciphertext to dst.
func (kr *Keyring) AppendSeal(dst, plaintext, ad []byte) ([]byte, error) {
	return kr.core().AppendSeal(dst, plaintext, ad)
}

// Open authenticates and decrypts a binary ciphertext (v1 to v3, or v4 of
// the empty scope) sealed for ad. On any error it returns nil
// plaintext.
func (kr *Keyring) Open(ciphertext, ad []byte) ([]byte, error) {
	return kr.core().AppendOpen(nil, ciphertext, ad)
}

// AppendOpen is like Open but appends the plaintext to dst. On error dst is
// returned unchanged.
func (kr *Keyring) AppendOpen(dst, ciphertext, ad []byte) ([]byte, error) {
	return kr.core().AppendOpen(dst, ciphertext, ad)
}

// ContextMatches reports whether the context check of a ciphertext (its
// header's check of the associated data, FORMAT.md) matches ad, without
// decrypting: a cheap test, for jobs that look for values
// bound under an older layout of their associated data, which ad a value was
// sealed for. A true answer is a hint (the check is 32 bits), not an
// authentication: only Open authenticates.
func (kr *Keyring) ContextMatches(ciphertext, ad []byte) (bool, error) {
	return kr.core().ContextMatches(ciphertext, ad)
}

// Scope returns the keyring's view of one scope (see [FieldScope]): it
// seals and opens ciphertext v4 values of that scope.
func (kr *Keyring) Scope(scope string) *Scope { return (*Scope)(kr.core().Scope(scope)) }

// Derive returns length bytes of key material for a named purpose, derived
// with HKDF-SHA-256 from a secret root that is stored with the keyring and
// does not change when data keys rotate: every copy of the keyring file
// ever written derives the same bytes. Package field uses it for v1
// blind-index keys and row MACs; a new record a database writer could
// forge takes [Keyring.IntegrityKey] instead. The result is secret.
func (kr *Keyring) Derive(purpose string, length int) ([]byte, error) {
	return kr.core().Derive(purpose, length)
}

// DeriveFromKey returns length bytes derived with HKDF-SHA-256 from the
// material of the key with the given ID, for a named purpose. Unlike
// Derive, the result changes when the key rotates, and the key ID recorded
// next to its use tells which key to derive from later (package password
// uses it for peppers). Disabled keys return [ErrKeyDisabled]. The result
// is secret.
func (kr *Keyring) DeriveFromKey(id KeyID, purpose string, length int) ([]byte, error) {
	return kr.core().DeriveFromKey(id, purpose, length)
}

// IntegrityKey returns the integrity key of purpose in the current
// integrity epoch, and the epoch (the primary key's ID), which a record
// stores beside its MAC: a record a database writer could forge or copy
// (a session's binding, a device token) is MAC'd under it, so that once
// the epoch's key is retired a copy of the keyring file from before
// forges nothing (FORMAT.md, "Integrity epochs"). The key is secret.
func (kr *Keyring) IntegrityKey(purpose string) (KeyID, []byte, error) {
	return kr.core().IntegrityKey(purpose)
}

// IntegrityKeyAt returns the integrity key of purpose in the epoch a
// record names. It fails with [ErrEpochEnded] once the epoch's key was
// retired, and with a *KeyError matching [ErrUnknownKey] or
// [ErrKeyDisabled] for an epoch the keyring does not hold or disabled.
func (kr *Keyring) IntegrityKeyAt(epoch KeyID, purpose string) ([]byte, error) {
	return kr.core().IntegrityKeyAt(epoch, purpose)
}

// WrapSubjectKey seals sk under the keyring's primary key, bound to ad
// (the field layer binds the subject's namespace, ID and the
// key's version). The result is a class-1 ciphertext, so it rotates,
// re-wraps and is censused like any value under a keyring key.
func (kr *Keyring) WrapSubjectKey(sk *SubjectKey, ad []byte) ([]byte, error) {
	return kr.core().WrapSubjectKey(sk.core(), ad)
}

// UnwrapSubjectKey opens a subject key wrapped by [Keyring.WrapSubjectKey]
// for the same ad. Errors are those of [Keyring.Open], or
// [ErrMalformed] for a payload that is not a subject key.
func (kr *Keyring) UnwrapSubjectKey(wrapped, ad []byte) (*SubjectKey, error) {
	sk, err := kr.core().UnwrapSubjectKey(wrapped, ad)
	if err != nil {
		return nil, err
	}
	return (*SubjectKey)(sk), nil
}

// Grant derives, for each scope, the key of each key in ids (every key that
// is not disabled when ids is empty) for that scope, and returns them as a
// new grant with a fresh ID.
func (kr *Keyring) Grant(scopes []GrantScope, ids ...KeyID) (*Grant, error) {
	g, err := kr.core().Grant(scopes, ids...)
	if err != nil {
		return nil, err
	}
	return (*Grant)(g), nil
}

// Watch re-reads the keyring's file every interval until ctx ends, and
// publishes a newer generation (see Reload). onError, if not nil, receives
// each failed re-read (a file of another keyring, an older copy, an
// unreachable KMS); the keyring in memory is then left as it was. It
// returns at once, with an error only for a keyring without a file.
//
// Between re-reads, a keyring loaded from a file that meets a ciphertext
// under a key ID it does not hold re-reads the file before failing if the
// file changed since it was last read or written (otherwise a stat is all
// it costs), so that a value written by a process that already promoted a
// new key opens here too, and a value under a made-up key ID costs no
// re-read.
func (kr *Keyring) Watch(ctx context.Context, interval time.Duration, onError func(error)) error {
	return kr.core().Watch(ctx, interval, onError)
}

// Reload reads the keyring's file again and publishes its keys, for a
// process that must pick up a change another process saved (a rotation by
// the CLI, a copy distributed from another host). It refuses a file of an
// older generation than the one in memory ([ErrRollback]) and a file of
// another keyring.
func (kr *Keyring) Reload(ctx context.Context) error { return kr.core().Reload(ctx) }

// Marshal seals the keyring under ks (format v2): a fresh AES-256-GCM file
// key encrypts the key list, and ks wraps the file key. The result is a
// JSON document safe to store on disk.
func (kr *Keyring) Marshal(ctx context.Context, ks kms.KeyService) ([]byte, error) {
	return kr.core().Marshal(ctx, ks)
}
