package password

import (
	"crypto/fips140"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"unicode/utf8"
)

// pbkdf2Scheme is PBKDF2 (RFC 8018) with one hash function, through
// crypto/pbkdf2. Only SHA-256 is written (OWASP's FIPS-140 option); SHA-1
// and SHA-512 are verified for migration.
type pbkdf2Scheme struct {
	id     string
	hash   func() hash.Hash
	size   int // the hash's output size: PBKDF2 runs once per output block
	write  bool
	minIts int // OWASP's minimum iterations, 0 for verify-only
}

var (
	pbkdf2SHA256 = pbkdf2Scheme{"pbkdf2-sha256", sha256.New, sha256.Size, true, 600_000}
	pbkdf2SHA1   = pbkdf2Scheme{"pbkdf2-sha1", sha1.New, sha1.Size, false, 0}
	pbkdf2SHA512 = pbkdf2Scheme{"pbkdf2-sha512", sha512.New, sha512.Size, false, 0}
)

func (s pbkdf2Scheme) name() string { return s.id }

func (pbkdf2Scheme) setParam(p *Params, key string, v uint64) error {
	switch key {
	case "i":
		return setParamAs(&p.Iterations, "i", v, 1<<31-1)
	case "l":
		return setParamAs(&p.KeyLen, "l", v, 1<<20)
	}
	return errUnknownParam
}

func (pbkdf2Scheme) required() []string { return []string{"i"} }

func (pbkdf2Scheme) valid(p Params) error {
	if p.Iterations < 1 {
		return fmt.Errorf("PBKDF2 needs i>=1")
	}
	return nil
}

// work is iterations × output blocks: PBKDF2 repeats its iterations for
// every hash-sized block of output.
func (s pbkdf2Scheme) work(p Params) uint64 {
	blocks := (max(p.KeyLen, 1) + s.size - 1) / s.size
	return uint64(p.Iterations) * uint64(blocks)
}

func (s pbkdf2Scheme) limit(p Params, l Limits) error {
	return firstLimit(
		over("iterations", uint64(p.Iterations), uint64(l.MaxPBKDF2Iterations)),
		over("iterations × output blocks", s.work(p), l.MaxPBKDF2Work))
}

func (s pbkdf2Scheme) weak(p Params) string {
	if !s.write {
		return s.id + " is accepted for verification only"
	}
	if p.Iterations < s.minIts {
		return fmt.Sprintf("%s below %d iterations", s.id, s.minIts)
	}
	return ""
}

func (pbkdf2Scheme) weakerThan(p, want Params) bool { return p.Iterations < want.Iterations }
func (pbkdf2Scheme) cost(Params) (int64, int)       { return 1 << 10, 1 }

func (s pbkdf2Scheme) compute(d *decoded, pw []byte, _ *lease) ([]byte, error) {
	if !utf8.Valid(pw) && d.format == "spring-pbkdf2" {
		return nil, &ParseError{"spring-pbkdf2", "Spring hashes UTF-16 characters; the password is not UTF-8"}
	}
	salt := d.saltWithSuffix()
	if len(salt) < 16 && fips140.Enabled() {
		return nil, fmt.Errorf("%w: a PBKDF2 hash with a %d-bit salt cannot be verified (the module needs 128 bits): reset the password", ErrNotApproved, 8*len(salt))
	}
	out, err := pbkdf2.Key(s.hash, string(pw), salt, d.params.Iterations, d.params.KeyLen)
	if err != nil {
		return nil, fmt.Errorf("password: pbkdf2: %w", err)
	}
	return out, nil
}

func (pbkdf2Scheme) encode(p Params) string { return fmt.Sprintf("i=%d,l=%d", p.Iterations, p.KeyLen) }
func (s pbkdf2Scheme) describe(p Params) string {
	return fmt.Sprintf("%s i=%d", s.id, p.Iterations)
}
func (s pbkdf2Scheme) writable() bool { return s.write }

// approved refuses, in the FIPS 140-3 mode, a scheme Hash would write that
// the mode does not approve: only PBKDF2 with SHA-2 is.
func approved(s Scheme) error {
	if !fips140.Enabled() || s == PBKDF2SHA256 || s == PBKDF2SHA512 {
		return nil
	}
	return fmt.Errorf("%w: %v cannot write new hashes there: prefer PBKDF2-SHA-256 (password.PBKDF2SHA256OWASP)", ErrNotApproved, s)
}
