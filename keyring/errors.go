package keyring

import (
	"errors"
	"fmt"
)

// Errors returned when opening a ciphertext. Each failure mode has its own
// sentinel so callers can tell them apart with [errors.Is]; none of them
// carries plaintext or key material, and Open never returns partial
// plaintext alongside an error.
var (
	// ErrTruncated means the ciphertext is shorter than its header, nonce
	// and tag.
	ErrTruncated = errors.New("keyring: ciphertext truncated")
	// ErrUnsupportedVersion means the first byte names a format version this
	// build does not know. See [VersionError].
	ErrUnsupportedVersion = errors.New("keyring: unsupported ciphertext version")
	// ErrMalformed means the ciphertext is structurally invalid: a bad text
	// encoding, or an algorithm byte that does not match the key.
	ErrMalformed = errors.New("keyring: malformed ciphertext")
	// ErrUnknownKey means no key in the keyring has the ciphertext's key ID.
	// See [KeyError].
	ErrUnknownKey = errors.New("keyring: unknown key ID")
	// ErrKeyDisabled means the key exists but is disabled. See [KeyError].
	ErrKeyDisabled = errors.New("keyring: key is disabled")
	// ErrWrongContext means the ciphertext was sealed for another context
	// (another table, column or row): it was copied or misaddressed.
	ErrWrongContext = errors.New("keyring: ciphertext belongs to another context")
	// ErrAuthentication means the ciphertext failed authentication: it was
	// tampered with, or sealed under other key material with the same ID.
	ErrAuthentication = errors.New("keyring: message authentication failed")
)

// Errors returned by keyring management.
var (
	// ErrNoPrimary means the keyring has no primary key to seal with.
	ErrNoPrimary = errors.New("keyring: no primary key")
	// ErrPrimaryKey means the operation would leave the keyring without
	// exactly one primary key; promote another key first.
	ErrPrimaryKey = errors.New("keyring: operation not allowed on the primary key")
)

// VersionError reports a ciphertext or keyring format version this build
// does not understand. It matches [ErrUnsupportedVersion].
type VersionError struct {
	What    string // "ciphertext" or "keyring"
	Version string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("keyring: unsupported %s format version %s", e.What, e.Version)
}

// Is reports whether target is [ErrUnsupportedVersion].
func (e *VersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// KeyError reports a problem with a specific key, named by its public ID.
// It unwraps to [ErrUnknownKey], [ErrKeyDisabled] or [ErrPrimaryKey].
type KeyError struct {
	ID  KeyID
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("%v: %v", e.Err, e.ID) }

// Unwrap returns the sentinel error.
func (e *KeyError) Unwrap() error { return e.Err }
