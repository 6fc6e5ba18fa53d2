package keyring

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MasterKeySize is the size of a local master key.
const MasterKeySize = 32

// MasterKeyEnv is the environment variable holding a base64 master key.
const MasterKeyEnv = "WARD_MASTER_KEY"

// ErrBadMasterKey means a master key could not be parsed. The message
// never quotes the key.
var ErrBadMasterKey = errors.New("keyring: master key must be base64 of 32 random bytes")

// MasterKey is a local key-encryption key: a [Wrapper] that seals keyrings
// with AES-256-GCM. Its ID is a fingerprint: the first 8 bytes of a
// domain-separated SHA-256 of the key, in hex.
type MasterKey struct {
	key [MasterKeySize]byte
	id  string
}

var _ Wrapper = (*MasterKey)(nil)

// GenerateMasterKey returns a new random master key.
func GenerateMasterKey() *MasterKey {
	var b [MasterKeySize]byte
	rand.Read(b[:])
	return newMasterKey(b)
}

func newMasterKey(b [MasterKeySize]byte) *MasterKey {
	sum := sha256.Sum256(append([]byte("ward master key id v1\x00"), b[:]...))
	return &MasterKey{key: b, id: "mk-" + hex.EncodeToString(sum[:8])}
}

// ParseMasterKey parses the base64 (standard or URL alphabet, padded or
// not) encoding of 32 bytes. Surrounding white space is ignored.
func ParseMasterKey(s string) (*MasterKey, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil || len(raw) != MasterKeySize {
		clear(raw)
		return nil, ErrBadMasterKey
	}
	var b [MasterKeySize]byte
	copy(b[:], raw)
	clear(raw)
	return newMasterKey(b), nil
}

// LoadMasterKey reads a master key from a file (if path is not empty) or
// else from the WARD_MASTER_KEY environment variable, as looked up by
// getenv (os.Getenv when nil).
func LoadMasterKey(path string, getenv func(string) string) (*MasterKey, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("keyring: reading master key: %w", err)
		}
		defer clear(b)
		mk, err := ParseMasterKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("%w (file %s)", err, path)
		}
		return mk, nil
	}
	v := getenv(MasterKeyEnv)
	if v == "" {
		return nil, fmt.Errorf("keyring: no master key: set %s or pass a master key file", MasterKeyEnv)
	}
	mk, err := ParseMasterKey(v)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, MasterKeyEnv)
	}
	return mk, nil
}

// Encode returns the base64 encoding of the key. The result is secret.
func (m *MasterKey) Encode() string { return base64.StdEncoding.EncodeToString(m.key[:]) }

// String returns the fingerprint only.
func (m *MasterKey) String() string { return "MasterKey(" + m.id + ")" }

// Provider returns "local".
func (m *MasterKey) Provider() string { return "local" }

// KeyID returns the key's fingerprint.
func (m *MasterKey) KeyID() string { return m.id }

// Wrap seals dataKey under the master key with AES-256-GCM.
func (m *MasterKey) Wrap(_ context.Context, dataKey, aad []byte) ([]byte, error) {
	g := gcm(m.key[:])
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(dataKey)+g.Overhead())
	rand.Read(nonce)
	return g.Seal(nonce, nonce, dataKey, aad), nil
}

// Unwrap opens a data key sealed by Wrap.
func (m *MasterKey) Unwrap(_ context.Context, wrapped, aad []byte) ([]byte, error) {
	g := gcm(m.key[:])
	if len(wrapped) < g.NonceSize()+g.Overhead() {
		return nil, ErrTruncated
	}
	out, err := g.Open(nil, wrapped[:g.NonceSize()], wrapped[g.NonceSize():], aad)
	if err != nil {
		return nil, ErrAuthentication
	}
	return out, nil
}

// Destroy zeroes the key. The MasterKey must not be used afterwards.
func (m *MasterKey) Destroy() { clear(m.key[:]) }
