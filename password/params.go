package password

import (
	"fmt"
)

// Scheme is a password hashing scheme. The zero value is invalid.
type Scheme uint8

const (
	// SchemeUnknown is the invalid zero value.
	SchemeUnknown Scheme = iota
	// Argon2id is RFC 9106's recommended variant, and ward's default.
	Argon2id
	// Argon2i is verified for migration only.
	Argon2i
	// Argon2d is verified for migration only.
	Argon2d
	// Bcrypt is verified and can be written for systems that need it.
	Bcrypt
	// Scrypt is verified and can be written.
	Scrypt
	// PBKDF2SHA256 is verified and can be written (FIPS-140 settings).
	PBKDF2SHA256
	// PBKDF2SHA1 is verified for migration only (Django, Spring v5.5).
	PBKDF2SHA1
	// PBKDF2SHA512 is verified for migration only.
	PBKDF2SHA512
)

// String returns the scheme's PHC identifier, such as "argon2id".
func (s Scheme) String() string {
	if impl, ok := schemes[s]; ok {
		return impl.name()
	}
	return fmt.Sprintf("Scheme(%d)", uint8(s))
}

// ParseScheme parses a name as printed by String.
func ParseScheme(name string) (Scheme, error) {
	for s, impl := range schemes {
		if impl.name() == name {
			return s, nil
		}
	}
	return SchemeUnknown, fmt.Errorf("password: unknown scheme %q", name)
}

// Params are a scheme and its cost parameters. Fields that do not apply to
// the scheme are zero.
type Params struct {
	Scheme Scheme
	// Argon2: memory in KiB, iterations, lanes.
	Memory      uint32
	Time        uint32
	Parallelism uint8
	// Bcrypt cost (log2 of rounds).
	Cost int
	// Scrypt: log2 of N, block size and parallelism (kept apart from
	// Argon2's lanes for clarity).
	LogN uint8
	R, P int
	// PBKDF2 iterations.
	Iterations int
	// SaltLen and KeyLen are the salt and output lengths in bytes.
	SaltLen, KeyLen int
}

// Presets. Each returns a fresh value, so that no caller can change what
// another gets.

// OWASP is the OWASP Password Storage Cheat Sheet's first Argon2id
// configuration: m=19456 KiB (19 MiB), t=2, p=1. It is the default.
func OWASP() Params {
	return Params{Scheme: Argon2id, Memory: 19456, Time: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

// SpringV58 is Spring Security's Argon2PasswordEncoder
// defaultsForSpringSecurity_v5_8(), the password field report's profile:
// m=16384, t=2, p=1. It is below OWASP's equivalence line (m·t of 16384·2
// against 19456·2), so writing it needs Policy.AllowWeak; it exists to
// reproduce the field report and to interoperate.
func SpringV58() Params {
	return Params{Scheme: Argon2id, Memory: 16384, Time: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

// Strong is RFC 9106's second recommended option: m=64 MiB, t=3, p=4.
func Strong() Params {
	return Params{Scheme: Argon2id, Memory: 65536, Time: 3, Parallelism: 4, SaltLen: 16, KeyLen: 32}
}

// Bcrypt12 is bcrypt at OWASP's recommended cost, for systems that need it.
func Bcrypt12() Params { return Params{Scheme: Bcrypt, Cost: 12, SaltLen: 16, KeyLen: bcryptKeyLen} }

// Scrypt17 is scrypt at OWASP's recommended cost (N=2^17, r=8, p=1).
func Scrypt17() Params { return Params{Scheme: Scrypt, LogN: 17, R: 8, P: 1, SaltLen: 16, KeyLen: 32} }

// PBKDF2SHA256OWASP is PBKDF2-HMAC-SHA256 at OWASP's 600,000 iterations.
func PBKDF2SHA256OWASP() Params {
	return Params{Scheme: PBKDF2SHA256, Iterations: 600000, SaltLen: 16, KeyLen: 32}
}

// Preset returns a preset by name: owasp, spring-v5.8, strong, bcrypt12,
// scrypt17, pbkdf2-sha256.
func Preset(name string) (Params, error) {
	switch name {
	case "owasp":
		return OWASP(), nil
	case "spring-v5.8", "spring":
		return SpringV58(), nil
	case "strong", "rfc9106":
		return Strong(), nil
	case "bcrypt12":
		return Bcrypt12(), nil
	case "scrypt17":
		return Scrypt17(), nil
	case "pbkdf2-sha256":
		return PBKDF2SHA256OWASP(), nil
	}
	return Params{}, fmt.Errorf("password: unknown preset %q (owasp, spring-v5.8, strong, bcrypt12, scrypt17, pbkdf2-sha256)", name)
}

// String describes the parameters, as in the PHC string.
func (p Params) String() string {
	if impl, ok := schemes[p.Scheme]; ok {
		return impl.describe(p)
	}
	return p.Scheme.String()
}

// MemoryBytes is the memory one hash with these parameters holds, which
// the Limiter charges against its budget.
func (p Params) MemoryBytes() int64 {
	if impl, ok := schemes[p.Scheme]; ok {
		m, _ := impl.cost(p)
		return m
	}
	return 1 << 10
}

// weakerThan reports whether p costs less than want (a rehash is due).
func (p Params) weakerThan(want Params) bool {
	if p.Scheme != want.Scheme || p.SaltLen < want.SaltLen || p.KeyLen < want.KeyLen {
		return true
	}
	impl, ok := schemes[p.Scheme]
	return ok && impl.weakerThan(p, want)
}

// Minimum salt and output lengths Hash writes (and, for the output, Verify
// accepts: see Limits.MinKeyLen).
const (
	minSaltLen = 16
	minKeyLen  = 16
)

// checkStrength returns an error if p is below the minimums.
func (p Params) checkStrength() error {
	impl, err := schemeOf(p.Scheme)
	if err != nil {
		return err
	}
	if !impl.writable() {
		return fmt.Errorf("%w: %v is accepted for verification only", ErrUnsupportedScheme, p.Scheme)
	}
	weak := func(what string) error { return fmt.Errorf("%w: %s (%v)", ErrWeakParams, what, p) }
	if p.SaltLen < minSaltLen {
		return weak(fmt.Sprintf("salt shorter than %d bytes", minSaltLen))
	}
	if _, own := ownFormatOf(p.Scheme); !own && p.KeyLen < minKeyLen {
		return weak("output shorter than 16 bytes")
	}
	if w := impl.weak(p); w != "" {
		return weak(w)
	}
	return nil
}

// Weakness says why p is below OWASP's minimums for its scheme, or returns
// "" if it is not. Schemes kept for verification only (Argon2d, PBKDF2 with
// SHA-1 or SHA-512) are always reported.
func Weakness(p Params) string {
	err := p.checkStrength()
	if err == nil {
		return ""
	}
	return err.Error()
}
