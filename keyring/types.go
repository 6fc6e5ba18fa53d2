package keyring

import "github.com/wardlab/ward/internal/keycore"

// Algorithm names an AEAD construction a key is used with (its String is
// the conventional name, such as "AES-256-GCM"; KeySize and NonceSize give
// its sizes). The zero value is invalid, so a forgotten field never
// silently selects a default.
type Algorithm = keycore.Algorithm

// The algorithms.
const (
	// AlgorithmUnknown is the invalid zero value.
	AlgorithmUnknown = keycore.AlgorithmUnknown
	// AES128GCM is AES-128 in GCM mode with a 12-byte random nonce and a
	// 16-byte tag. It is the chat field report's choice (FIELD-REPORTS.md).
	AES128GCM = keycore.AES128GCM
	// AES256GCM is AES-256 in GCM mode with a 12-byte random nonce and a
	// 16-byte tag. It is the default.
	AES256GCM = keycore.AES256GCM
	// XChaCha20Poly1305 uses a 24-byte random nonce and a 16-byte tag.
	// Prefer it on CPUs without AES hardware, where it is both faster and
	// free of table-based AES timing concerns. The FIPS 140-3 mode refuses
	// it ([ErrNotApproved]).
	XChaCha20Poly1305 = keycore.XChaCha20Poly1305
)

// DefaultAlgorithm is the algorithm used when none is named.
const DefaultAlgorithm = keycore.DefaultAlgorithm

// TagSize is the authentication tag size of every supported algorithm.
const TagSize = keycore.TagSize

// Algorithms lists every supported algorithm in ID order.
func Algorithms() []Algorithm { return keycore.Algorithms() }

// ParseAlgorithm parses a name as printed by Algorithm's String. Matching
// is case-insensitive and accepts the short forms "aes128gcm", "aes256gcm"
// and "xchacha20poly1305".
func ParseAlgorithm(s string) (Algorithm, error) { return keycore.ParseAlgorithm(s) }

// Overhead returns how many bytes a ciphertext under alg adds to its
// plaintext in the current version.
func Overhead(alg Algorithm) int { return keycore.Overhead(alg) }

// KeyID is the public 32-bit identifier of a key. It is written in every
// ciphertext and printed (String) as eight hex digits.
type KeyID = keycore.KeyID

// ParseKeyID parses eight (or fewer) hex digits as KeyID's String prints
// them; a "0x" prefix is accepted.
func ParseKeyID(s string) (KeyID, error) { return keycore.ParseKeyID(s) }

// State is the lifecycle state of a key ("primary", "decrypt-only",
// "disabled"). The zero value is invalid.
type State = keycore.State

// The states of a key.
const (
	// StateUnknown is the invalid zero value.
	StateUnknown = keycore.StateUnknown
	// Primary keys seal new values and open old ones. A keyring has
	// exactly one.
	Primary = keycore.Primary
	// DecryptOnly keys open existing values but never seal new ones: the
	// state of a key after rotation, or of a new key not yet promoted.
	DecryptOnly = keycore.DecryptOnly
	// Disabled keys neither seal nor open. Their material is kept so the
	// key can be enabled again.
	Disabled = keycore.Disabled
)

// KeyInfo is the public description of a key: everything but its material
// (ID, Algorithm, State, Created).
type KeyInfo = keycore.KeyInfo

// Formats of the ciphertext and of a keyring file.
const (
	// CurrentVersion is the newest ciphertext version (format v4, written
	// by scopes: [Keyring.Scope]). Every ciphertext starts with its
	// version, so a value whose first byte is lower was written in an
	// older form, and one whose byte is higher by a newer release.
	CurrentVersion = keycore.CurrentVersion
	// FileFormat is the keyring file format Marshal writes.
	FileFormat = keycore.FileFormat
	// FileFormatV1 is the keyring file format of earlier releases, which
	// Unmarshal still reads.
	FileFormatV1 = keycore.FileFormatV1
)

// EncodeText returns the text form of a binary ciphertext: "w4:" ("w3:",
// "w2:", "w1:" for older values) and unpadded base64url.
func EncodeText(ct []byte) string { return keycore.EncodeText(ct) }

// DecodeText parses the text form back to the binary form. A "wN:" prefix
// of an unknown version reports [ErrUnsupportedVersion]; anything else
// malformed, including a prefix that disagrees with the version byte,
// reports [ErrMalformed].
func DecodeText(s string) ([]byte, error) { return keycore.DecodeText(s) }

// IsText reports whether b looks like the text form rather than the binary
// form. The binary form starts with a version byte below 0x20, so the two
// cannot be confused.
func IsText(b []byte) bool { return keycore.IsText(b) }
