package keycore

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
	"unsafe"
)

// Ciphertext format v3 (binary form), all integers big-endian:
//
//	offset size  field
//	0      1     version: 0x03
//	1      1     key class (1 a keyring key, 2 a subject key)
//	2      1     algorithm (1 AES-128-GCM, 2 AES-256-GCM, 3 XChaCha20-Poly1305)
//	3      4     key ID (class 1) or subject key version (class 2)
//	7      4     context check
//	11     n     nonce (12 bytes for AES-GCM, 24 for XChaCha20-Poly1305)
//	11+n   ...   AEAD ciphertext of the plaintext, followed by the 16-byte tag
//
// v1 and v2 (read only) had a 10-byte header without the class byte:
// version, algorithm, key ID, check. The AEAD's associated data is the
// header followed by the context, so every header byte is authenticated.
// The context check lets Open tell a value presented under another context
// from a tampered one; the tag is the security. In v3 it is a CRC-32C of
// the context masked by AES under a key derived from the data key over the
// value's nonce (for XChaCha20-Poly1305 keys, a Poly1305 tag under such a
// key); in v2 the first 4 bytes of HMAC-SHA-256
// of nonce ‖ context; in v1 an unkeyed CRC-32C of the context.
//
// The text form is "w3:" ("w2:", "w1:") followed by the unpadded base64url
// encoding of the binary form. See FORMAT.md at the repository's root.
const (
	// version1 is the first byte of a v1 ciphertext (read, never written).
	version1 = 0x01
	// version2 is the first byte of a v2 ciphertext (read, never written).
	version2 = 0x02
	// version3 is the first byte of the ciphertexts Seal writes outside
	// the FIPS 140-3 mode.
	version3 = 0x03
	// CurrentVersion is the newest ciphertext version (format v4, written
	// by scopes: [Keyring.Scope]). Every ciphertext starts with its
	// version, so a value whose first byte is lower was written in an
	// older form, and one whose byte is higher by a newer release.
	CurrentVersion = version4
	// headerSize is the size of a v3 or v4 header, before the nonce.
	headerSize = 11
	// checkSize is the size of the context check.
	checkSize = 4
)

// headerSizeV2 is the size of a v1 or v2 header.
const headerSizeV2 = 10

// keyClass says which kind of key sealed a v3 ciphertext.
type keyClass uint8

const (
	// classKeyring is a keyring key, named by its key ID.
	classKeyring keyClass = 1
	// classSubject is a subject's own data key (keys per user), named by
	// the subject bound in the context and the key version in the header.
	classSubject keyClass = 2
)

// headerSizeOf returns the header size of a ciphertext version.
func headerSizeOf(version byte) int {
	if version == version3 || version == version4 {
		return headerSize
	}
	return headerSizeV2
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the parsed header of a ciphertext. It is not part of the API:
// callers learn the one thing they need with keycore.KeyIDOf.
type header struct {
	Version uint8
	// Class is the key class (v3); v1 and v2 values are classKeyring.
	Class        keyClass
	Algorithm    Algorithm
	KeyID        KeyID
	ContextCheck uint32
}

// size is the header's size in its version.
func (h header) size() int { return headerSizeOf(h.Version) }

// Overhead returns how many bytes a ciphertext under alg adds to its
// plaintext in the current version.
func Overhead(alg Algorithm) int { return headerSize + alg.NonceSize() + TagSize }

// KeyIDOf parses the header of a binary ciphertext (any version) without
// opening it, and returns the ID of the keyring key that sealed it (for a
// value sealed under a subject's own key, the subject key's version); the
// census of a column and the ORM integrations' guards use it. An error
// says why b is not a ward ciphertext ([ErrTruncated], [ErrMalformed], a
// [*VersionError]). The rest of the format is not part of the API:
// FORMAT.md describes it, and only Open authenticates it.
func KeyIDOf(b []byte) (KeyID, error) {
	h, err := parseHeader(b)
	return h.KeyID, err
}

// parseHeader parses and validates the header of a binary ciphertext
// without opening it.
func parseHeader(ct []byte) (header, error) {
	if len(ct) < 1 {
		return header{}, ErrTruncated
	}
	var h header
	switch ct[0] {
	case version1, version2:
		if len(ct) < headerSizeV2 {
			return header{}, ErrTruncated
		}
		h = header{Version: ct[0], Class: classKeyring, Algorithm: Algorithm(ct[1]),
			KeyID: KeyID(binary.BigEndian.Uint32(ct[2:6])), ContextCheck: binary.BigEndian.Uint32(ct[6:10])}
	case version3, version4:
		if len(ct) < headerSize {
			return header{}, ErrTruncated
		}
		h = header{Version: ct[0], Class: keyClass(ct[1]), Algorithm: Algorithm(ct[2]),
			KeyID: KeyID(binary.BigEndian.Uint32(ct[3:7])), ContextCheck: binary.BigEndian.Uint32(ct[7:11])}
		if h.Class != classKeyring && h.Class != classSubject {
			return header{}, &VersionError{What: "ciphertext key class", Version: strconv.Itoa(int(h.Class))}
		}
	default:
		return header{}, &VersionError{What: "ciphertext", Version: "0x" + strconv.FormatUint(uint64(ct[0]), 16)}
	}
	if !h.Algorithm.valid() {
		return header{}, ErrMalformed
	}
	if len(ct) < h.size()+h.Algorithm.NonceSize()+TagSize {
		return header{}, ErrTruncated
	}
	return h, nil
}

// textPrefix returns "w1:" to "w4:".
func textPrefix(version byte) string { return "w" + strconv.Itoa(int(version)) + ":" }

// EncodeText returns the text form of a binary ciphertext: "w4:" ("w3:",
// "w2:", "w1:" for older values) and unpadded base64url.
func EncodeText(ct []byte) string {
	b := appendText(make([]byte, 0, 3+base64.RawURLEncoding.EncodedLen(len(ct))), ct)
	// b is this function's own, never written again: the string shares
	// its bytes (one allocation per value instead of two, which a
	// re-encryption job makes per row).
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendText appends the text form of a binary ciphertext to dst.
func appendText(dst, ct []byte) []byte {
	v := byte(CurrentVersion)
	if len(ct) > 0 && ct[0] >= version1 && ct[0] <= version4 {
		v = ct[0]
	}
	dst = append(dst, textPrefix(v)...)
	return base64.RawURLEncoding.AppendEncode(dst, ct)
}

// DecodeText parses the text form back to the binary form. A "wN:" prefix
// of an unknown version reports [ErrUnsupportedVersion]; anything else
// malformed, including a prefix that disagrees with the version byte or a
// character outside unpadded base64url (white space included: nothing is
// trimmed), reports [ErrMalformed].
func DecodeText(s string) ([]byte, error) {
	if len(s) < 3 || s[0] != 'w' || s[2] != ':' {
		return nil, ErrMalformed
	}
	if s[1] < '1' || s[1] > '4' {
		if s[1] >= '0' && s[1] <= '9' {
			return nil, &VersionError{What: "ciphertext", Version: s[1:2]}
		}
		return nil, ErrMalformed
	}
	// Go's decoder skips CR and LF; the format has neither (nor does any
	// other reader: keyring/testdata/text-forms.json).
	if strings.IndexByte(s, '\r') >= 0 || strings.IndexByte(s, '\n') >= 0 {
		return nil, ErrMalformed
	}
	b, err := base64.RawURLEncoding.DecodeString(s[3:])
	if err != nil || len(b) == 0 || !strings.HasPrefix(s, textPrefix(b[0])) {
		return nil, ErrMalformed
	}
	return b, nil
}

// IsText reports whether b looks like the text form rather than the binary
// form. The binary form starts with a version byte below 0x20, so the two
// cannot be confused.
func IsText(b []byte) bool { return len(b) > 0 && b[0] == 'w' }

// HeaderRoom is the room the field layer leaves at the front of a value's
// associated data for the ciphertext header ([Keyring.AppendSealAD]): the
// size of a v3 or v4 header, the largest.
const HeaderRoom = headerSize

// Remnant is what survives of a ciphertext's header in a value that no
// longer parses: the key that sealed it, as far as its first bytes tell.
// The zero Remnant (Version 0) is none.
type Remnant struct {
	Version uint8
	// Subject is true for a value sealed under a subject's own key; KeyID
	// is then the subject key's version.
	Subject bool
	KeyID   KeyID
}

// RemnantOf reports whether b, which does not parse as a ward ciphertext,
// starts like one: the text form "w1:" to "w4:" whose base64url, decoded
// as far as it is intact, begins with the version its prefix names, or
// the binary form's version byte; followed in either case by a valid key
// class and algorithm and a whole key ID. Such a value is a ciphertext cut
// short (a column too narrow, a non-strict MySQL server truncating it) or
// otherwise damaged, not plaintext: FORMAT.md, "Damaged values". Whether
// the key ID is one of the keyring's is the caller's question. It reads at
// most the first few bytes after the prefix; it allocates nothing for a
// binary value and at most 12 bytes for a text one.
func RemnantOf(b []byte) (Remnant, bool) {
	head := b
	if IsText(b) {
		if len(b) < 3 || b[2] != ':' || b[1] < '1' || b[1] > '4' {
			return Remnant{}, false
		}
		// 16 characters decode to the 12 bytes that hold any header's key ID.
		enc := b[3:min(len(b), 3+16)]
		n := 0
		for n < len(enc) && isBase64URL(enc[n]) {
			n++
		}
		n -= n % 4 // whole quanta only: no trailing-bit question arises
		var buf [12]byte
		m, err := base64.RawURLEncoding.Decode(buf[:], enc[:n])
		if err != nil || m == 0 || buf[0] != b[1]-'0' {
			return Remnant{}, false
		}
		head = buf[:m]
	}
	return remnantHeader(head)
}

// remnantHeader reads a header's version, class, algorithm and key ID
// from the first bytes of a binary ciphertext, without its check, nonce or
// body.
func remnantHeader(h []byte) (Remnant, bool) {
	if len(h) < 1 {
		return Remnant{}, false
	}
	switch h[0] {
	case version1, version2:
		if len(h) < 6 || !Algorithm(h[1]).valid() {
			return Remnant{}, false
		}
		return Remnant{Version: h[0], KeyID: KeyID(binary.BigEndian.Uint32(h[2:6]))}, true
	case version3, version4:
		if len(h) < 7 || !Algorithm(h[2]).valid() {
			return Remnant{}, false
		}
		class := keyClass(h[1])
		if class != classKeyring && class != classSubject {
			return Remnant{}, false
		}
		return Remnant{Version: h[0], Subject: class == classSubject, KeyID: KeyID(binary.BigEndian.Uint32(h[3:7]))}, true
	}
	return Remnant{}, false
}

// isBase64URL reports whether c is a character of the base64url alphabet.
func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// PlaintextSize returns the length of the plaintext a binary ciphertext
// (any version) holds, from its header and length alone: what the value
// will take once sealed again (a job sizing a column).
func PlaintextSize(b []byte) (int, error) {
	h, err := parseHeader(b)
	if err != nil {
		return 0, err
	}
	return len(b) - h.size() - h.Algorithm.NonceSize() - TagSize, nil
}
