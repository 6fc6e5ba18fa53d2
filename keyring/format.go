package keyring

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
)

// Ciphertext formats v1 and v2 (binary form) share one layout, all
// integers big-endian:
//
//	offset size  field
//	0      1     version: 0x01 or 0x02
//	1      1     algorithm (1 AES-128-GCM, 2 AES-256-GCM, 3 XChaCha20-Poly1305)
//	2      4     key ID
//	6      4     context check
//	10     n     nonce (12 bytes for AES-GCM, 24 for XChaCha20-Poly1305)
//	10+n   ...   AEAD ciphertext of the plaintext, followed by the 16-byte tag
//
// The AEAD's associated data is the 10 header bytes followed by the
// context, so every header byte is authenticated. The context check lets
// Open tell a value presented under another context from a tampered one;
// the tag is the security. In v2 (written since ward-keyring/v2) it is the
// first 4 bytes of HMAC-SHA-256 of nonce ‖ context under a key derived
// from the data key, and reveals nothing about the context without the
// key. In v1 (read only) it was an unkeyed CRC-32C of the context.
//
// The text form is "w1:" or "w2:" followed by the unpadded base64url
// encoding of the binary form. See FORMAT.md at the module root.
const (
	// Version1 is the first byte of a v1 ciphertext (read, never written).
	Version1 = 0x01
	// Version2 is the first byte of the ciphertexts Seal writes.
	Version2 = 0x02
	// CurrentVersion is the version Seal writes.
	CurrentVersion = Version2
	// HeaderSize is the size of the header before the nonce.
	HeaderSize = 10
	// CheckSize is the size of the context check.
	CheckSize = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the public, parsed header of a ciphertext.
type Header struct {
	Version      uint8
	Algorithm    Algorithm
	KeyID        KeyID
	ContextCheck uint32
}

// Overhead returns how many bytes a ciphertext under alg adds to its
// plaintext.
func Overhead(alg Algorithm) int { return HeaderSize + alg.NonceSize() + TagSize }

// ParseHeader parses and validates the header of a binary ciphertext
// without opening it, for example to count values per key ID.
func ParseHeader(ct []byte) (Header, error) {
	if len(ct) < 1 {
		return Header{}, ErrTruncated
	}
	if ct[0] != Version1 && ct[0] != Version2 {
		return Header{}, &VersionError{What: "ciphertext", Version: "0x" + strconv.FormatUint(uint64(ct[0]), 16)}
	}
	if len(ct) < HeaderSize {
		return Header{}, ErrTruncated
	}
	h := Header{
		Version:      ct[0],
		Algorithm:    Algorithm(ct[1]),
		KeyID:        KeyID(binary.BigEndian.Uint32(ct[2:6])),
		ContextCheck: binary.BigEndian.Uint32(ct[6:10]),
	}
	if !h.Algorithm.valid() {
		return Header{}, ErrMalformed
	}
	if len(ct) < Overhead(h.Algorithm) {
		return Header{}, ErrTruncated
	}
	return h, nil
}

// textPrefix returns "w1:" or "w2:".
func textPrefix(version byte) string { return "w" + strconv.Itoa(int(version)) + ":" }

// EncodeText returns the text form of a binary ciphertext: "w2:" (or "w1:"
// for a v1 value) and unpadded base64url.
func EncodeText(ct []byte) string { return string(AppendText(nil, ct)) }

// AppendText appends the text form of a binary ciphertext to dst.
func AppendText(dst, ct []byte) []byte {
	v := byte(CurrentVersion)
	if len(ct) > 0 && ct[0] == Version1 {
		v = Version1
	}
	dst = append(dst, textPrefix(v)...)
	return base64.RawURLEncoding.AppendEncode(dst, ct)
}

// DecodeText parses the text form back to the binary form. A "wN:" prefix
// of an unknown version reports [ErrUnsupportedVersion]; anything else
// malformed, including a prefix that disagrees with the version byte,
// reports [ErrMalformed].
func DecodeText(s string) ([]byte, error) {
	if len(s) < 3 || s[0] != 'w' || s[2] != ':' {
		return nil, ErrMalformed
	}
	if s[1] != '1' && s[1] != '2' {
		if s[1] >= '0' && s[1] <= '9' {
			return nil, &VersionError{What: "ciphertext", Version: s[1:2]}
		}
		return nil, ErrMalformed
	}
	b, err := base64.RawURLEncoding.DecodeString(s[3:])
	if err != nil || len(b) == 0 || strings.HasPrefix(s, textPrefix(b[0])) == false {
		return nil, ErrMalformed
	}
	return b, nil
}

// IsText reports whether b looks like the text form rather than the binary
// form. The binary form starts with a version byte below 0x20, so the two
// cannot be confused.
func IsText(b []byte) bool { return len(b) > 0 && b[0] == 'w' }
