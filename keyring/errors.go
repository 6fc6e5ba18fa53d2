package keyring

import "github.com/wardlab/ward/internal/keycore"

// Errors returned when opening a ciphertext. Each failure mode has its own
// sentinel so callers can tell them apart with errors.Is; none of them
// carries plaintext or key material, and Open never returns partial
// plaintext alongside an error.
var (
	// ErrTruncated means the ciphertext is shorter than its header, nonce
	// and tag.
	ErrTruncated = keycore.ErrTruncated
	// ErrUnsupportedVersion means the first byte names a format version this
	// build does not know. See [VersionError].
	ErrUnsupportedVersion = keycore.ErrUnsupportedVersion
	// ErrMalformed means the ciphertext is structurally invalid: a bad text
	// encoding, or an algorithm byte that does not match the key.
	ErrMalformed = keycore.ErrMalformed
	// ErrUnknownKey means no key in the keyring has the ciphertext's key ID.
	// See [KeyError].
	ErrUnknownKey = keycore.ErrUnknownKey
	// ErrKeyDisabled means the key exists but is disabled. See [KeyError].
	ErrKeyDisabled = keycore.ErrKeyDisabled
	// ErrKeyRemoved means the key was removed (retired): its material is
	// gone, and only the derivations kept for it remain
	// ([Manager.RemoveKeeping]). It matches [ErrUnknownKey].
	ErrKeyRemoved = keycore.ErrKeyRemoved
	// ErrWrongContext means the ciphertext's context check does not match
	// the context presented: it was sealed for another context (copied to
	// another table, column or row, or the row's bound columns changed), or
	// its header is damaged. The check cannot tell the two apart, and it
	// never vouches for the value: only the AEAD tag does.
	ErrWrongContext = keycore.ErrWrongContext
	// ErrAuthentication means the ciphertext failed authentication: it was
	// tampered with, or sealed under other key material with the same ID.
	ErrAuthentication = keycore.ErrAuthentication
	// ErrSubjectKey means a value sealed under a subject key was given to a
	// keyring key, or the reverse.
	ErrSubjectKey = keycore.ErrSubjectKey
	// ErrNotApproved means the FIPS 140-3 mode (crypto/fips140.Enabled) is
	// on and the algorithm is not one it approves (XChaCha20-Poly1305).
	ErrNotApproved = keycore.ErrNotApproved
)

// Errors of grants.
var (
	// ErrNotGranted means a grant was asked for something it does not
	// hold: another scope, a value of another version or key class.
	ErrNotGranted = keycore.ErrNotGranted
	// ErrGrantSeals means a grant, which only opens, was asked to seal.
	ErrGrantSeals = keycore.ErrGrantSeals
)

// Errors returned by keyring management.
var (
	// ErrNoPrimary means the keyring has no primary key to seal with.
	ErrNoPrimary = keycore.ErrNoPrimary
	// ErrEpochEnded means a record names an integrity epoch whose key was
	// retired (Keyring.IntegrityKeyAt): a copy from before, or a forgery
	// made with an old keyring file.
	ErrEpochEnded = keycore.ErrEpochEnded
	// ErrPrimaryKey means the operation would leave the keyring without
	// exactly one primary key; promote another key first.
	ErrPrimaryKey = keycore.ErrPrimaryKey
)

// Errors returned by keyring files.
var (
	// ErrWrongWrapper means the keyring was sealed under another master key
	// or KMS key than the one given.
	ErrWrongWrapper = keycore.ErrWrongWrapper
	// ErrCorruptKeyring means the stored keyring failed authentication or
	// does not parse: it was tampered with or damaged.
	ErrCorruptKeyring = keycore.ErrCorruptKeyring
	// ErrStale means the keyring file changed (or disappeared) since this
	// process loaded it: another writer saved first. Nothing was written;
	// Reload and apply the change again. See [StaleError].
	ErrStale = keycore.ErrStale
	// ErrRollback means a keyring file, or state a database holds, is older
	// than one already seen: an older copy was put back. See
	// [RollbackError].
	ErrRollback = keycore.ErrRollback
	// ErrWrongKeyring means a file or database belongs to another keyring
	// (another ID) than the one given.
	ErrWrongKeyring = keycore.ErrWrongKeyring
	// ErrLocked means another writer held the keyring's lock for too long.
	ErrLocked = keycore.ErrLocked
)

// StaleError reports a save refused because the file is not the one this
// process loaded (Path, and Err when it could not be read). It matches
// [ErrStale].
type StaleError = keycore.StaleError

// RollbackError reports a keyring of generation Generation where Seen or
// later was expected (Path names the file, or is empty when the
// generation came from elsewhere). It matches [ErrRollback].
type RollbackError = keycore.RollbackError

// VersionError reports a ciphertext or keyring format version this build
// does not understand (What, Version). It matches [ErrUnsupportedVersion].
type VersionError = keycore.VersionError

// KeyError reports a problem with a specific key, named by its public ID,
// with a Hint of what an unknown key ID likely means for this process. It
// unwraps to [ErrUnknownKey], [ErrKeyDisabled] or [ErrPrimaryKey].
type KeyError = keycore.KeyError
