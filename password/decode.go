package password

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wardlab/ward/keyring"
)

// decoded is a parsed hash: parameters, salt and expected output, plus
// what the format needs to recompute it.
type decoded struct {
	params Params
	format string
	salt   []byte
	hash   []byte
	// bcrypt is the MCF string handed to x/crypto/bcrypt.
	bcrypt []byte
	// pepper is the keyring key the password was peppered with (0: none).
	pepper keyring.KeyID
	// prehash transforms the password first (Django's bcrypt_sha256).
	prehash func([]byte) []byte
	// saltSuffix is appended to the salt (Spring PBKDF2's secret; empty).
	saltSuffix []byte
	// kek marks a key-bearing hash ($ward-argon2id-kek$): Argon2id with a
	// 64-byte tag whose first half is stored (hash) and whose second half
	// is a secret returned to the caller, never stored.
	kek bool
}

// saltWithSuffix is the salt the scheme computes with.
func (d *decoded) saltWithSuffix() []byte {
	if d.saltSuffix == nil {
		return d.salt
	}
	return append(append([]byte(nil), d.salt...), d.saltSuffix...)
}

// errUnknownParam is returned by a scheme's setParam for a key it does not
// know.
var errUnknownParam = errors.New("unknown parameter")

var (
	b64    = base64.RawStdEncoding.Strict()
	b64Pad = base64.StdEncoding.Strict()
)

// Inspect parses an encoded hash without computing anything, and returns
// its scheme and parameters. It applies DefaultLimits.
func Inspect(encoded string) (Params, string, error) {
	d, err := decode(encoded, DefaultLimits())
	if err != nil {
		return Params{}, "", err
	}
	return d.params, d.format, nil
}

// PepperOf parses an encoded hash without computing anything and returns
// the keyring key it was peppered with (ok false: none): the census that
// retiring a keyring key needs (ward keyring retire).
func PepperOf(encoded string) (id keyring.KeyID, ok bool, err error) {
	if len(encoded) > maxEncodedLen {
		return 0, false, &ParseError{"hash", fmt.Sprintf("longer than %d bytes", maxEncodedLen)}
	}
	d, err := decodeAny(encoded)
	if err != nil {
		return 0, false, err
	}
	return d.pepper, d.pepper != 0, nil
}

// decode parses every supported format and checks lim before returning.
func decode(s string, lim Limits) (*decoded, error) {
	if len(s) > maxEncodedLen {
		return nil, &ParseError{"hash", fmt.Sprintf("longer than %d bytes", maxEncodedLen)}
	}
	d, err := decodeAny(s)
	if err != nil {
		return nil, err
	}
	if err := schemes[d.params.Scheme].valid(d.params); err != nil {
		return nil, &ParseError{d.format, err.Error()}
	}
	if err := lim.check(d.params); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeAny(s string) (*decoded, error) {
	switch {
	case strings.HasPrefix(s, "{"):
		return decodeSpring(s)
	case strings.HasPrefix(s, "$2"):
		return decodeBcrypt(s, "bcrypt")
	case bareSpringScrypt(s):
		return decodeSpringScrypt(s)
	case strings.HasPrefix(s, "$"):
		return decodePHC(s, "phc")
	case strings.HasPrefix(s, "pbkdf2_sha256$"), strings.HasPrefix(s, "pbkdf2_sha1$"):
		return decodeDjangoPBKDF2(s)
	case strings.HasPrefix(s, "argon2$"):
		return decodePHC(strings.TrimPrefix(s, "argon2"), "django-argon2")
	case strings.HasPrefix(s, "bcrypt_sha256$"):
		d, err := decodeBcrypt(strings.TrimPrefix(s, "bcrypt_sha256$"), "django-bcrypt_sha256")
		if err != nil {
			return nil, err
		}
		d.prehash = func(pw []byte) []byte {
			sum := sha256.Sum256(pw)
			return []byte(hex.EncodeToString(sum[:]))
		}
		return d, nil
	case s == "":
		return nil, &ParseError{"hash", "empty"}
	}
	return nil, fmt.Errorf("%w: unrecognised hash format", ErrUnsupportedScheme)
}

// decodePHC parses $id$v=…$params$salt$hash (PHC string format, as
// written by libsodium, the argon2 CLI, Spring, the Rust argon2 crate and
// passlib) and passlib's $pbkdf2-sha256$rounds$salt$hash.
func decodePHC(s, format string) (*decoded, error) {
	bad := func(r string) error { return &ParseError{format, r} }
	parts := strings.Split(s, "$")
	if len(parts) < 2 || parts[0] != "" {
		return nil, bad("does not start with $")
	}
	id := parts[1]
	kek := id == KeyBearingID || id == KeyBearingPBKDF2ID
	switch id {
	case KeyBearingID:
		id, format = Argon2id.String(), KeyBearingID
	case KeyBearingPBKDF2ID:
		id, format = PBKDF2SHA256.String(), KeyBearingPBKDF2ID
	}
	scheme, err := ParseScheme(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %.40q", ErrUnsupportedScheme, id)
	}
	rest := parts[2:]
	d := &decoded{format: format, params: Params{Scheme: scheme}, kek: kek}
	_, isArgon2 := schemes[scheme].(argon2Scheme)
	_, isPBKDF2 := schemes[scheme].(pbkdf2Scheme)
	if isArgon2 {
		if len(rest) > 0 && strings.HasPrefix(rest[0], "v=") {
			if rest[0] != "v=19" {
				return nil, fmt.Errorf("%w: Argon2 version %q (only v=19, 0x13, is supported)", ErrUnsupportedScheme, rest[0][2:])
			}
			rest = rest[1:]
		} else {
			return nil, fmt.Errorf("%w: Argon2 version 0x10 (no v= field)", ErrUnsupportedScheme)
		}
	}
	if len(rest) != 3 {
		return nil, bad(fmt.Sprintf("want 3 fields after the identifier, got %d", len(rest)))
	}
	passlibRounds := isPBKDF2 && !strings.Contains(rest[0], "=")
	if passlibRounds {
		d.format = "passlib"
		n, err := parseUint(rest[0], 32)
		if err != nil {
			return nil, bad("rounds: " + err.Error())
		}
		d.params.Iterations = int(n)
	} else if err := d.parseParams(rest[0]); err != nil {
		return nil, err
	}
	decodeField := func(name, v string) ([]byte, error) {
		if passlibRounds { // passlib's adapted base64 writes '.' for '+'
			v = strings.ReplaceAll(v, ".", "+")
		}
		b, err := b64.DecodeString(v)
		if err != nil {
			return nil, bad(name + " is not valid base64")
		}
		return b, nil
	}
	if d.salt, err = decodeField("salt", rest[1]); err != nil {
		return nil, err
	}
	if d.hash, err = decodeField("hash", rest[2]); err != nil {
		return nil, err
	}
	keyLenParam := d.params.KeyLen
	d.params.SaltLen, d.params.KeyLen = len(d.salt), len(d.hash)
	if len(d.salt) == 0 || len(d.hash) == 0 {
		return nil, bad("empty salt or hash")
	}
	if keyLenParam != 0 && keyLenParam != len(d.hash) {
		return nil, bad("l= does not match the hash length")
	}
	if d.kek && len(d.hash) != keyBearingHalf {
		return nil, bad(fmt.Sprintf("a key-bearing hash stores a %d-byte verifier", keyBearingHalf))
	}
	return d, nil
}

// parseParams parses k=v,k=v for the scheme, requiring every mandatory key
// exactly once.
func (d *decoded) parseParams(list string) error {
	bad := func(r string) error { return &ParseError{d.format, r} }
	seen := map[string]bool{}
	p := &d.params
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return bad(fmt.Sprintf("parameter %q is not k=v", trunc(kv)))
		}
		if seen[k] {
			return bad("duplicate parameter " + trunc(k))
		}
		seen[k] = true
		if k == "keyid" {
			b, err := b64.DecodeString(v)
			if err != nil || len(b) != 4 {
				return bad("keyid must be 4 bytes of base64")
			}
			d.pepper = keyring.KeyID(binary.BigEndian.Uint32(b))
			continue
		}
		if k == "data" {
			return fmt.Errorf("%w: Argon2 associated data (data=) is not supported", ErrUnsupportedScheme)
		}
		n, err := parseUint(v, 32)
		if err != nil {
			return bad(k + ": " + err.Error())
		}
		impl := schemes[p.Scheme]
		if err := impl.setParam(p, k, n); err == errUnknownParam {
			return bad("unknown parameter " + trunc(k))
		} else if err != nil {
			return err
		}
	}
	for _, k := range schemes[p.Scheme].required() {
		if !seen[k] {
			return bad("missing parameter " + k)
		}
	}
	return nil
}

// decodeDjangoPBKDF2 parses pbkdf2_sha256$iterations$salt$base64(hash).
// Django's salt is used as its literal bytes.
func decodeDjangoPBKDF2(s string) (*decoded, error) {
	bad := func(r string) error { return &ParseError{"django", r} }
	parts := strings.Split(s, "$")
	if len(parts) != 4 {
		return nil, bad("want algorithm$iterations$salt$hash")
	}
	scheme := PBKDF2SHA256
	if parts[0] == "pbkdf2_sha1" {
		scheme = PBKDF2SHA1
	}
	n, err := parseUint(parts[1], 32)
	if err != nil || n < 1 {
		return nil, bad("iterations must be a positive number")
	}
	if parts[2] == "" {
		return nil, bad("empty salt")
	}
	hash, err := b64Pad.DecodeString(parts[3])
	if err != nil || len(hash) == 0 {
		return nil, bad("hash is not valid base64")
	}
	salt := []byte(parts[2])
	return &decoded{format: "django", salt: salt, hash: hash,
		params: Params{Scheme: scheme, Iterations: int(n), SaltLen: len(salt), KeyLen: len(hash)}}, nil
}

// Spring Security's DelegatingPasswordEncoder prefixes {id}. The ids and
// encoder settings follow PasswordEncoderFactories in Spring Security 6.
var springPBKDF2 = map[string]struct {
	scheme  Scheme
	saltLen int
	iter    int
}{
	"pbkdf2":                     {PBKDF2SHA1, 8, 185000},    // defaultsForSpringSecurity_v5_5
	"pbkdf2@SpringSecurity_v5_8": {PBKDF2SHA256, 16, 310000}, // defaultsForSpringSecurity_v5_8
}

func decodeSpring(s string) (*decoded, error) {
	end := strings.IndexByte(s, '}')
	if end < 0 || end > 40 {
		return nil, &ParseError{"spring", "no {id} prefix"}
	}
	id, rest := s[1:end], s[end+1:]
	var d *decoded
	var err error
	switch id {
	case "bcrypt":
		d, err = decodeBcrypt(rest, "spring-bcrypt")
	case "argon2", "argon2@SpringSecurity_v5_8":
		d, err = decodePHC(rest, "spring-argon2")
	case "scrypt", "scrypt@SpringSecurity_v5_8":
		d, err = decodeSpringScrypt(rest)
	case "pbkdf2", "pbkdf2@SpringSecurity_v5_8":
		cfg := springPBKDF2[id]
		raw, herr := hex.DecodeString(rest)
		if herr != nil || len(raw) <= cfg.saltLen {
			return nil, &ParseError{"spring-pbkdf2", "not hex of salt and hash"}
		}
		d = &decoded{format: "spring-pbkdf2", salt: raw[:cfg.saltLen], hash: raw[cfg.saltLen:],
			params: Params{Scheme: cfg.scheme, Iterations: cfg.iter, SaltLen: cfg.saltLen, KeyLen: len(raw) - cfg.saltLen}}
	default:
		return nil, fmt.Errorf("%w: Spring encoder {%s}", ErrUnsupportedScheme, trunc(id))
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// bareSpringScrypt reports whether s is SCryptPasswordEncoder's form
// without DelegatingPasswordEncoder's {scrypt} prefix (an application that
// used the encoder directly): $ and hex digits where a PHC string has its
// scheme's name, which no PHC identifier is.
func bareSpringScrypt(s string) bool {
	id, _, ok := strings.Cut(strings.TrimPrefix(s, "$"), "$")
	if !ok || !strings.HasPrefix(s, "$") || id == "" || len(id) > 8 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !strings.ContainsRune("0123456789abcdef", rune(id[i])) {
			return false
		}
	}
	return strings.ContainsAny(id, "0123456789")
}

// decodeSpringScrypt parses SCryptPasswordEncoder's
// $hex(log2N<<16 | r<<8 | p)$base64(salt)$base64(key).
func decodeSpringScrypt(s string) (*decoded, error) {
	bad := func(r string) error { return &ParseError{"spring-scrypt", r} }
	parts := strings.Split(s, "$")
	if len(parts) != 4 || parts[0] != "" {
		return nil, bad("want $params$salt$key")
	}
	v, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return nil, bad("params are not hex")
	}
	salt, err1 := b64Pad.DecodeString(parts[2])
	key, err2 := b64Pad.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(salt) == 0 || len(key) == 0 {
		return nil, bad("salt or key is not valid base64")
	}
	if v>>16 > 63 {
		return nil, bad("scrypt needs ln in 1..63")
	}
	p := Params{Scheme: Scrypt, LogN: uint8(v >> 16), R: int(v >> 8 & 0xff), P: int(v & 0xff), SaltLen: len(salt), KeyLen: len(key)}
	return &decoded{format: "spring-scrypt", salt: salt, hash: key, params: p}, nil
}

// parseUint accepts decimal digits only (no sign, no spaces), at most
// 10 of them.
func parseUint(s string, bits int) (uint64, error) {
	if s == "" || len(s) > 10 {
		return 0, fmt.Errorf("not a number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("not a number")
		}
	}
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("out of range")
	}
	return n, nil
}

// trunc shortens attacker-controlled text quoted in errors.
func trunc(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}
