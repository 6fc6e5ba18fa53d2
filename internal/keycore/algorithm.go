package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/fips140"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Algorithm names an AEAD construction a key is used with. The zero value is
// invalid, so a forgotten field never silently selects a default.
type Algorithm uint8

const (
	// AlgorithmUnknown is the invalid zero value.
	AlgorithmUnknown Algorithm = 0
	// AES128GCM is AES-128 in GCM mode with a 12-byte random nonce and a
	// 16-byte tag. It is the chat field report's choice (FIELD-REPORTS.md).
	AES128GCM Algorithm = 1
	// AES256GCM is AES-256 in GCM mode with a 12-byte random nonce and a
	// 16-byte tag. It is the default.
	AES256GCM Algorithm = 2
	// XChaCha20Poly1305 uses a 24-byte random nonce and a 16-byte tag. Prefer
	// it on CPUs without AES hardware, where it is both faster and free of
	// table-based AES timing concerns.
	XChaCha20Poly1305 Algorithm = 3
)

// ErrNotApproved means the FIPS 140-3 mode (crypto/fips140.Enabled) is on
// and the algorithm is not one it approves (XChaCha20-Poly1305).
var ErrNotApproved = errors.New("keyring: XChaCha20-Poly1305 is not approved in the FIPS 140-3 mode: use AES-256-GCM or AES-128-GCM")

// DefaultAlgorithm is the algorithm used when none is named.
const DefaultAlgorithm = AES256GCM

// TagSize is the authentication tag size of every supported algorithm.
const TagSize = 16

var algorithmNames = map[Algorithm]string{
	AES128GCM:         "AES-128-GCM",
	AES256GCM:         "AES-256-GCM",
	XChaCha20Poly1305: "XChaCha20-Poly1305",
}

// Algorithms lists every supported algorithm in ID order.
func Algorithms() []Algorithm { return []Algorithm{AES128GCM, AES256GCM, XChaCha20Poly1305} }

// String returns the algorithm's conventional name, such as "AES-256-GCM".
func (a Algorithm) String() string {
	if n, ok := algorithmNames[a]; ok {
		return n
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm parses a name as printed by [Algorithm.String]. Matching is
// case-insensitive and accepts the short forms "aes128gcm", "aes256gcm" and
// "xchacha20poly1305".
func ParseAlgorithm(s string) (Algorithm, error) {
	norm := func(x string) string {
		out := make([]byte, 0, len(x))
		for i := 0; i < len(x); i++ {
			c := x[i]
			switch {
			case c >= 'A' && c <= 'Z':
				out = append(out, c+'a'-'A')
			case c == '-' || c == '_':
			default:
				out = append(out, c)
			}
		}
		return string(out)
	}
	for a, n := range algorithmNames {
		if norm(n) == norm(s) {
			return a, nil
		}
	}
	return AlgorithmUnknown, fmt.Errorf("keyring: unknown algorithm %q (want AES-128-GCM, AES-256-GCM or XChaCha20-Poly1305)", excerpt(s))
}

// KeySize returns the key length in bytes, or 0 for an unknown algorithm.
func (a Algorithm) KeySize() int {
	switch a {
	case AES128GCM:
		return 16
	case AES256GCM, XChaCha20Poly1305:
		return 32
	}
	return 0
}

// NonceSize returns the nonce length in bytes, or 0 for an unknown algorithm.
func (a Algorithm) NonceSize() int {
	switch a {
	case AES128GCM, AES256GCM:
		return 12
	case XChaCha20Poly1305:
		return chacha20poly1305.NonceSizeX
	}
	return 0
}

func (a Algorithm) valid() bool { return a.KeySize() != 0 }

// newAEAD builds the cipher for key material of the right length.
func (a Algorithm) newAEAD(material []byte) (cipher.AEAD, error) {
	if len(material) != a.KeySize() {
		return nil, fmt.Errorf("keyring: %v key must be %d bytes, got %d", a, a.KeySize(), len(material))
	}
	switch a {
	case AES128GCM, AES256GCM:
		b, err := aes.NewCipher(material)
		if err != nil {
			return nil, fmt.Errorf("keyring: %v: %w", a, err)
		}
		if fips140.Enabled() {
			// The module refuses GCM with a caller's nonce: this one
			// opens values v1 to v3 (whose nonce follows the header)
			// and never seals them.
			return cipher.NewGCMWithRandomNonce(b)
		}
		return cipher.NewGCM(b)
	case XChaCha20Poly1305:
		if fips140.Enabled() {
			return nil, ErrNotApproved
		}
		return chacha20poly1305.NewX(material)
	}
	return nil, fmt.Errorf("keyring: unsupported algorithm %v", a)
}
