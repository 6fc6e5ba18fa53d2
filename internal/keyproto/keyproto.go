// Package keyproto is the part of the keyring's protocol that only ward's
// own packages use: the state MACs and anchors behind the ledger, the
// wrapping of user-held subject keys, and reading a ciphertext's header
// without opening it. An application needs none of it; FORMAT.md
// describes the formats for readers in other languages.
package keyproto

import (
	"context"

	"github.com/wardlab/ward/internal/keyhooks"
	"github.com/wardlab/ward/keyring"
)

// HeaderRoom is the room the field layer leaves at the front of a value's
// associated data for the ciphertext header (keyring.Keyring.AppendSealAD).
const HeaderRoom = keyhooks.HeaderSize

// StateMAC returns a MAC of msg under the keyring's newest state key and
// that key's epoch, for [VerifyStateMAC]: a copy of the keyring file from
// before a key change cannot forge it.
func StateMAC(kr *keyring.Keyring, msg []byte) (epoch uint64, mac []byte) {
	return keyhooks.StateMAC(kr, msg)
}

// VerifyStateMAC checks a MAC made by [StateMAC]. It returns an error
// matching keyring.ErrUnknownEpoch (and keyring.ErrRollback) if kr lacks
// the state key, and keyring.ErrStateMAC if the MAC does not match.
func VerifyStateMAC(kr *keyring.Keyring, epoch uint64, msg, mac []byte) error {
	return keyhooks.VerifyStateMAC(kr, epoch, msg, mac)
}

// StateEpoch returns the epoch of the keyring's newest state key.
func StateEpoch(kr *keyring.Keyring) uint64 { return keyhooks.StateEpoch(kr) }

// Anchor returns what the keyring file remembers about a database.
func Anchor(kr *keyring.Keyring, database string) (keyring.Anchor, bool) {
	a, ok := keyhooks.Anchor(kr, database)
	if !ok {
		return keyring.Anchor{}, false
	}
	return a.(keyring.Anchor), true
}

// Anchored lists the databases the keyring file anchors, sorted.
func Anchored(kr *keyring.Keyring) []string { return keyhooks.Anchored(kr) }

// SetAnchor records a database's newest state in the keyring file,
// merging marks; it refuses to lower a counter or epoch
// (keyring.ErrAnchorRollback).
func SetAnchor(ctx context.Context, kr *keyring.Keyring, database string, a keyring.Anchor) error {
	return keyhooks.SetAnchor(kr, ctx, database, a)
}

// KeyIDOf parses the header of a binary ciphertext (any version) without
// opening it, and returns the ID of the keyring key that sealed it (for a
// value sealed under a subject's own key, the key's version). An error
// says why b is not a ward ciphertext (keyring.ErrTruncated,
// keyring.ErrMalformed, a *keyring.VersionError).
func KeyIDOf(b []byte) (keyring.KeyID, error) {
	id, err := keyhooks.KeyIDOf(b)
	return keyring.KeyID(id), err
}

// IsSubjectSealed reports, from its first two bytes, whether a binary
// ciphertext names a subject key (class 2 of v3).
func IsSubjectSealed(ciphertext []byte) bool { return keyhooks.IsSubjectSealed(ciphertext) }

// SubjectKeyVersion reports whether a binary ciphertext names a subject
// key, and which version, from its header alone.
func SubjectKeyVersion(ciphertext []byte) (version uint32, ok bool) {
	return keyhooks.SubjectKeyVersion(ciphertext)
}

// WrapSubjectKeyWith seals sk under a key-encryption key of the caller's
// (a user-held key's, derived from the user's password), bound to context.
func WrapSubjectKeyWith(kek, sk *keyring.SubjectKey, context []byte) []byte {
	return keyhooks.WrapSubjectKeyWith(kek, sk, context)
}

// UnwrapSubjectKeyWith opens a subject key wrapped by [WrapSubjectKeyWith]
// under the same kek and context.
func UnwrapSubjectKeyWith(kek *keyring.SubjectKey, wrapped, context []byte) (*keyring.SubjectKey, error) {
	sk, err := keyhooks.UnwrapSubjectKeyWith(kek, wrapped, context)
	if err != nil {
		return nil, err
	}
	return sk.(*keyring.SubjectKey), nil
}

// SubjectKeyFromSecret builds a subject key from secret material the
// caller derived (a key-encryption key from a password hash's output);
// secret must be exactly the algorithm's key size, and is copied.
func SubjectKeyFromSecret(alg keyring.Algorithm, version uint32, secret []byte) (*keyring.SubjectKey, error) {
	sk, err := keyhooks.SubjectKeyFromSecret(uint8(alg), version, secret)
	if err != nil {
		return nil, err
	}
	return sk.(*keyring.SubjectKey), nil
}
