package keycore

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
	// ErrWrongContext means the ciphertext's context check does not match
	// the context presented: it was sealed for another context (copied to
	// another table, column or row, or the row's bound columns changed), or
	// its header is damaged. The check cannot tell the two apart, and it
	// never vouches for the value: only the AEAD tag does.
	ErrWrongContext = errors.New("keyring: ciphertext belongs to another context or is damaged")
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

// Errors returned by keyring files.
var (
	// ErrWrongWrapper means the keyring was sealed under another master key
	// or KMS key than the one given.
	ErrWrongWrapper = errors.New("keyring: keyring is sealed under a different key")
	// ErrCorruptKeyring means the stored keyring failed authentication or
	// does not parse: it was tampered with or damaged.
	ErrCorruptKeyring = errors.New("keyring: stored keyring is corrupt or was tampered with")
	// ErrStale means the keyring file changed (or disappeared) since this
	// process loaded it: another writer saved first. Nothing was written;
	// Reload and apply the change again. See [StaleError].
	ErrStale = errors.New("keyring: the keyring file changed since it was loaded")
	// ErrRollback means a keyring file is of an older generation than one
	// already seen: an older copy was put back. See [RollbackError].
	ErrRollback = errors.New("keyring: keyring file is older than one already seen")
	// ErrWrongKeyring means a file or database belongs to another keyring
	// (another ID) than the one given.
	ErrWrongKeyring = errors.New("keyring: a different keyring")
	// ErrLocked means another writer held the keyring's lock for too long.
	ErrLocked = errors.New("keyring: keyring file is locked")
)

// StaleError reports a save refused because the file is not the one this
// process loaded. It matches [ErrStale].
type StaleError struct {
	Path string
	Err  error // why the file could not be read, if it could not
}

func (e *StaleError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: %v; nothing was written", ErrStale, e.Path, e.Err)
	}
	return fmt.Sprintf("%v: %s was saved by another writer; nothing was written (reload and try again)", ErrStale, e.Path)
}

// Unwrap returns ErrStale and the read error, if any.
func (e *StaleError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrStale}
	}
	return []error{ErrStale, e.Err}
}

// RollbackError reports a keyring of generation Generation where Seen or
// later was expected. It matches [ErrRollback].
type RollbackError struct {
	Path       string // the file, or "" when the generation came from elsewhere
	Generation uint64 // what was offered
	Seen       uint64 // the highest generation already seen
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("%v: %s has generation %d, generation %d was already seen", ErrRollback, e.Path, e.Generation, e.Seen)
}

// Is reports whether target is ErrRollback.
func (e *RollbackError) Is(target error) bool { return target == ErrRollback }

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
	// Hint says what an unknown key ID likely means for this process (it
	// has not loaded the key yet, or the key is not in its file).
	Hint string
}

func (e *KeyError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("%v: %v: %s", e.Err, e.ID, e.Hint)
	}
	return fmt.Sprintf("%v: %v", e.Err, e.ID)
}

// Unwrap returns the sentinel error.
func (e *KeyError) Unwrap() error { return e.Err }
