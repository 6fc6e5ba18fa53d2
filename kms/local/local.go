// Package local is the key service of a local master key: 32 random bytes
// kept in a file or in WARD_MASTER_KEY. It is one provider among the KMS
// providers (see package kms): it wraps with AES-256-GCM and binds the
// encryption context as associated data. It is the embedded default, for
// development, tests and single hosts; it offers no custody beyond the
// secrecy of the master key itself. Most production users want a real KMS
// (kms/awskms).
package local

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/kms"
)

// KeySize is the size of a master key.
const KeySize = 32

// EnvVar is the environment variable holding a base64 master key.
const EnvVar = "WARD_MASTER_KEY"

// Provider is the provider name of a master key in a [kms.KeyRef].
const Provider = "local"

// Errors.
var (
	// ErrBadKey means a master key could not be parsed. The message never
	// quotes the key.
	ErrBadKey = errors.New("local: master key must be base64 of 32 random bytes")
	// ErrWeakKey means the key parses but is not random: all zero, one
	// repeated byte, or too few distinct byte values.
	ErrWeakKey = errors.New("local: master key is not random (too few distinct bytes)")
	// ErrNoKey means neither a key file nor the environment variable was
	// given.
	ErrNoKey = errors.New("local: no master key: set " + EnvVar + " or pass a master key file")
)

// MasterKey is a local key-encryption key, a [kms.KeyService]. Its ID is a
// fingerprint: "mk-" and the hex of the first 8 bytes of a domain-separated
// SHA-256 of the key, which tells which key is needed without revealing it.
// Printing a MasterKey shows only the fingerprint.
type MasterKey struct {
	key [KeySize]byte
	id  string
}

var _ kms.KeyService = (*MasterKey)(nil)

// Generate returns a new random master key.
func Generate() *MasterKey {
	var b [KeySize]byte
	rand.Read(b[:])
	return newMasterKey(b)
}

func newMasterKey(b [KeySize]byte) *MasterKey {
	sum := sha256.Sum256(append([]byte("ward master key id v1\x00"), b[:]...))
	return &MasterKey{key: b, id: "mk-" + hex.EncodeToString(sum[:8])}
}

// minDistinctBytes is the fewest distinct byte values a key may have. 32
// random bytes have about 30; fewer than 12 happens by chance with
// probability far below 2^-60, while all-zero, repeated and short-pattern
// keys (typed by hand, or a buffer never filled) have fewer.
const minDistinctBytes = 12

// Parse parses the base64 (standard or URL alphabet, padded or not)
// encoding of 32 bytes. Surrounding white space is ignored. Keys that are
// not random are refused with [ErrWeakKey].
func Parse(s string) (*MasterKey, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	defer clear(raw)
	if err != nil || len(raw) != KeySize {
		return nil, ErrBadKey
	}
	var seen [256]bool
	distinct := 0
	for _, c := range raw {
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if distinct < minDistinctBytes {
		return nil, ErrWeakKey
	}
	var b [KeySize]byte
	copy(b[:], raw)
	return newMasterKey(b), nil
}

// maxKeyFile bounds a master key file: its base64 key, a line end, and
// room for white space around it.
const maxKeyFile = 4096

// Load reads a master key from a file (if path is not empty) or else from
// the WARD_MASTER_KEY environment variable, as looked up by getenv
// (os.Getenv when nil).
func Load(path string, getenv func(string) string) (*MasterKey, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if path != "" {
		b, err := boundfile.Read(path, maxKeyFile)
		if err != nil {
			return nil, fmt.Errorf("local: reading master key: %w", err)
		}
		defer clear(b)
		mk, err := Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("%w (file %s)", err, path)
		}
		return mk, nil
	}
	v := getenv(EnvVar)
	if v == "" {
		return nil, ErrNoKey
	}
	mk, err := Parse(v)
	if err != nil && looksLikePath(v) {
		// The variable holds the key itself; a path there is a common
		// slip. The path is no secret, but say only that it looks like one.
		return nil, fmt.Errorf("%w (from %s, which holds a file path, not the key: export %s=$(cat FILE) or pass the file as a master key file)", err, EnvVar, EnvVar)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, EnvVar)
	}
	return mk, nil
}

// looksLikePath reports whether v, which failed to parse as a key, names
// an existing file or has a path's shape (a slash not in base64's place,
// or a file extension such as .key).
func looksLikePath(v string) bool {
	if _, err := os.Stat(v); err == nil {
		return true
	}
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~") ||
		regexp.MustCompile(`\.(key|txt|b64|pem)$`).MatchString(v)
}

// Encode returns the base64 encoding of the key. The result is secret.
func (m *MasterKey) Encode() string { return base64.StdEncoding.EncodeToString(m.key[:]) }

// String returns the fingerprint only.
func (m *MasterKey) String() string { return "MasterKey(" + m.id + ")" }

// GoString returns the fingerprint only.
func (m *MasterKey) GoString() string { return m.String() }

// Format prints the fingerprint only, whatever the verb.
func (m *MasterKey) Format(f fmt.State, _ rune) { f.Write([]byte(m.String())) }

// Key returns the provider "local" and the key's fingerprint.
func (m *MasterKey) Key() kms.KeyRef { return kms.KeyRef{Provider: Provider, ID: m.id} }

// Encrypt wraps plaintext with AES-256-GCM under the master key:
// nonce(12) || ciphertext || tag(16), with the canonical encryption context
// ([kms.CanonicalContext]) as associated data.
func (m *MasterKey) Encrypt(_ context.Context, plaintext []byte, encryptionContext map[string]string) ([]byte, error) {
	return m.seal(plaintext, kms.CanonicalContext(encryptionContext)), nil
}

// Decrypt unwraps what Encrypt returned.
func (m *MasterKey) Decrypt(_ context.Context, ciphertext []byte, encryptionContext map[string]string) ([]byte, error) {
	return m.open("Decrypt", ciphertext, kms.CanonicalContext(encryptionContext))
}

// DecryptKeyringV1 unwraps the file key of a keyring file written in format
// ward-keyring/v1 with provider "local", which bound the file's header as
// raw associated data rather than through an encryption context. Package
// keyring calls it to keep such files opening; nothing else should.
func (m *MasterKey) DecryptKeyringV1(wrapped, associatedData []byte) ([]byte, error) {
	return m.open("DecryptKeyringV1", wrapped, associatedData)
}

// Destroy zeroes the key. The MasterKey must not be used afterwards.
func (m *MasterKey) Destroy() { clear(m.key[:]) }

func (m *MasterKey) gcm() cipher.AEAD {
	b, err := aes.NewCipher(m.key[:])
	if err != nil {
		panic("local: internal error: " + err.Error()) // the key length is fixed
	}
	// It draws its own 96-bit nonces and writes them first: the layout
	// of every wrap since v1, and what the FIPS 140-3 module requires.
	g, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		panic("local: internal error: " + err.Error())
	}
	return g
}

func (m *MasterKey) seal(plaintext, ad []byte) []byte {
	return m.gcm().Seal(nil, nil, plaintext, ad)
}

func (m *MasterKey) open(op string, wrapped, ad []byte) ([]byte, error) {
	g := m.gcm()
	if len(wrapped) < g.Overhead() { // the nonce and the tag
		return nil, &kms.ServiceError{Op: op, Key: m.Key(), Kind: kms.ErrInvalidCiphertext, Err: errors.New("truncated")}
	}
	out, err := g.Open(nil, nil, wrapped, ad)
	if err != nil {
		return nil, &kms.ServiceError{Op: op, Key: m.Key(), Kind: kms.ErrInvalidCiphertext}
	}
	return out, nil
}
