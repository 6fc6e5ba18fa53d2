package keyring

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
)

// Ciphertext format v1 (binary form), all integers big-endian:
//
//	offset size  field
//	0      1     version, 0x01
//	1      1     algorithm (1 AES-128-GCM, 2 AES-256-GCM, 3 XChaCha20-Poly1305)
//	2      4     key ID
//	6      4     context check: CRC-32C of the context
//	10     n     nonce (12 bytes for AES-GCM, 24 for XChaCha20-Poly1305)
//	10+n   ...   AEAD ciphertext of the plaintext, followed by the 16-byte tag
//
// The AEAD's associated data is the 10 header bytes followed by the
// context, so every header byte is authenticated. The context check is not
// a security mechanism (the tag is): it only lets Open report
// [ErrWrongContext] instead of [ErrAuthentication] when an intact value is
// opened under the wrong context. It reveals a checksum of the context, which
// names where the value is stored and is not secret.
//
// The text form is the prefix "w1:" followed by the unpadded base64url
// encoding of the binary form. See FORMAT.md at the module root.
const (
	// Version1 is the first byte of every v1 ciphertext.
	Version1 = 0x01
	// HeaderSize is the size of the v1 header before the nonce.
	HeaderSize = 10
	// TextPrefix starts the text form of a v1 ciphertext.
	TextPrefix = "w1:"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the public, parsed header of a ciphertext.
type Header struct {
	Version      uint8
	Algorithm    Algorithm
	KeyID        KeyID
	ContextCheck uint32
}

// Overhead returns how many bytes a v1 ciphertext under alg adds to its
// plaintext.
func Overhead(alg Algorithm) int { return HeaderSize + alg.NonceSize() + TagSize }

// ParseHeader parses and validates the header of a binary ciphertext
// without opening it, for example to count values per key ID.
func ParseHeader(ct []byte) (Header, error) {
	if len(ct) < 1 {
		return Header{}, ErrTruncated
	}
	if ct[0] != Version1 {
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

func putHeader(dst []byte, alg Algorithm, id KeyID, contextCheck uint32) {
	dst[0] = Version1
	dst[1] = byte(alg)
	binary.BigEndian.PutUint32(dst[2:6], uint32(id))
	binary.BigEndian.PutUint32(dst[6:10], contextCheck)
}

// EncodeText returns the text form of a binary ciphertext.
func EncodeText(ct []byte) string {
	return TextPrefix + base64.RawURLEncoding.EncodeToString(ct)
}

// AppendText appends the text form of a binary ciphertext to dst.
func AppendText(dst, ct []byte) []byte {
	dst = append(dst, TextPrefix...)
	return base64.RawURLEncoding.AppendEncode(dst, ct)
}

// DecodeText parses the text form back to the binary form. A string that
// does not start with "w1:" but with another "wN:" prefix reports
// [ErrUnsupportedVersion]; anything else malformed reports [ErrMalformed].
func DecodeText(s string) ([]byte, error) {
	if !strings.HasPrefix(s, TextPrefix) {
		if len(s) >= 3 && s[0] == 'w' && s[1] >= '0' && s[1] <= '9' && s[2] == ':' {
			return nil, &VersionError{What: "ciphertext", Version: s[1:2]}
		}
		return nil, ErrMalformed
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(TextPrefix):])
	if err != nil {
		return nil, ErrMalformed
	}
	return b, nil
}

// IsText reports whether b looks like the text form rather than the binary
// form. The binary form starts with a version byte below 0x20, so the two
// cannot be confused.
func IsText(b []byte) bool { return len(b) > 0 && b[0] == 'w' }
