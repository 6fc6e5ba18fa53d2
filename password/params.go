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

var schemeNames = map[Scheme]string{
	Argon2id: "argon2id", Argon2i: "argon2i", Argon2d: "argon2d", Bcrypt: "bcrypt", Scrypt: "scrypt",
	PBKDF2SHA256: "pbkdf2-sha256", PBKDF2SHA1: "pbkdf2-sha1", PBKDF2SHA512: "pbkdf2-sha512",
}

// String returns the scheme's PHC identifier, such as "argon2id".
func (s Scheme) String() string {
	if n, ok := schemeNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Scheme(%d)", uint8(s))
}

// ParseScheme parses a name as printed by String.
func ParseScheme(name string) (Scheme, error) {
	for s, n := range schemeNames {
		if n == name {
			return s, nil
		}
	}
	return SchemeUnknown, fmt.Errorf("password: unknown scheme %q", name)
}

func (s Scheme) isArgon2() bool { return s == Argon2id || s == Argon2i || s == Argon2d }
func (s Scheme) isPBKDF2() bool { return s == PBKDF2SHA256 || s == PBKDF2SHA1 || s == PBKDF2SHA512 }

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
	// Scrypt: log2 of N, block size and parallelism (P, shared with Argon2's
	// lanes is avoided for clarity).
	LogN uint8
	R, P int
	// PBKDF2 iterations.
	Iterations int
	// SaltLen and KeyLen are the salt and output lengths in bytes.
	SaltLen, KeyLen int
}

// Presets.
var (
	// OWASP is the OWASP Password Storage Cheat Sheet's first Argon2id
	// configuration: m=19456 KiB (19 MiB), t=2, p=1. It is the default.
	OWASP = Params{Scheme: Argon2id, Memory: 19456, Time: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
	// SpringV58 is Spring Security's Argon2PasswordEncoder
	// defaultsForSpringSecurity_v5_8(), the seed's profile: m=16384, t=2,
	// p=1. It is below OWASP's equivalence line (m·t of 16384·2 against
	// 19456·2), so writing it needs Policy.AllowWeak; it exists to reproduce
	// the seed and to interoperate.
	SpringV58 = Params{Scheme: Argon2id, Memory: 16384, Time: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
	// Strong is RFC 9106's second recommended option: m=64 MiB, t=3, p=4.
	Strong = Params{Scheme: Argon2id, Memory: 65536, Time: 3, Parallelism: 4, SaltLen: 16, KeyLen: 32}
	// Bcrypt12, Scrypt17 and PBKDF2SHA256OWASP are the non-Argon2 schemes
	// at OWASP's recommended costs, for systems that need them.
	Bcrypt12          = Params{Scheme: Bcrypt, Cost: 12, SaltLen: 16, KeyLen: 23}
	Scrypt17          = Params{Scheme: Scrypt, LogN: 17, R: 8, P: 1, SaltLen: 16, KeyLen: 32}
	PBKDF2SHA256OWASP = Params{Scheme: PBKDF2SHA256, Iterations: 600000, SaltLen: 16, KeyLen: 32}
)

// Preset returns a preset by name: owasp, spring-v5.8, strong, bcrypt12,
// scrypt17, pbkdf2-sha256.
func Preset(name string) (Params, error) {
	switch name {
	case "owasp":
		return OWASP, nil
	case "spring-v5.8", "spring":
		return SpringV58, nil
	case "strong", "rfc9106":
		return Strong, nil
	case "bcrypt12":
		return Bcrypt12, nil
	case "scrypt17":
		return Scrypt17, nil
	case "pbkdf2-sha256":
		return PBKDF2SHA256OWASP, nil
	}
	return Params{}, fmt.Errorf("password: unknown preset %q (owasp, spring-v5.8, strong, bcrypt12, scrypt17, pbkdf2-sha256)", name)
}

// String describes the parameters, as in the PHC string.
func (p Params) String() string {
	switch {
	case p.Scheme.isArgon2():
		return fmt.Sprintf("%v m=%d,t=%d,p=%d", p.Scheme, p.Memory, p.Time, p.Parallelism)
	case p.Scheme == Bcrypt:
		return fmt.Sprintf("bcrypt cost=%d", p.Cost)
	case p.Scheme == Scrypt:
		return fmt.Sprintf("scrypt ln=%d,r=%d,p=%d", p.LogN, p.R, p.P)
	case p.Scheme.isPBKDF2():
		return fmt.Sprintf("%v i=%d", p.Scheme, p.Iterations)
	}
	return p.Scheme.String()
}

// MemoryBytes estimates the memory one hash with these parameters needs,
// which the Limiter charges against its budget.
func (p Params) MemoryBytes() int64 {
	switch {
	case p.Scheme.isArgon2():
		return int64(p.Memory) * 1024
	case p.Scheme == Scrypt:
		return 128*int64(p.R)*(int64(1)<<p.LogN) + 128*int64(p.R)*int64(p.P)
	case p.Scheme == Bcrypt:
		return 4 << 10
	}
	return 1 << 10
}

// weakerThan reports whether p costs less than want (a rehash is due).
func (p Params) weakerThan(want Params) bool {
	if p.Scheme != want.Scheme || p.SaltLen < want.SaltLen || p.KeyLen < want.KeyLen {
		return true
	}
	switch {
	case p.Scheme.isArgon2():
		return p.Memory < want.Memory || p.Time < want.Time
	case p.Scheme == Bcrypt:
		return p.Cost < want.Cost
	case p.Scheme == Scrypt:
		return p.LogN < want.LogN || p.R < want.R
	case p.Scheme.isPBKDF2():
		return p.Iterations < want.Iterations
	}
	return false
}

// Minimums below which Hash refuses to write a hash unless the policy
// sets AllowWeak. They follow OWASP's cheat sheet.
const (
	minArgon2Memory  = 7168 // KiB, with t >= 5; OWASP's smallest option
	minBcryptCost    = 10
	minScryptLogN    = 15
	minPBKDF2SHA256  = 600000
	minSaltLen       = 16
	minKeyLen        = 16
	minArgon2MemTime = 7168 * 5
)

// checkStrength returns an error if p is below the minimums.
func (p Params) checkStrength() error {
	weak := func(what string) error { return fmt.Errorf("%w: %s (%v)", ErrWeakParams, what, p) }
	if p.SaltLen < minSaltLen {
		return weak(fmt.Sprintf("salt shorter than %d bytes", minSaltLen))
	}
	switch {
	case p.Scheme == Argon2id || p.Scheme == Argon2i:
		if p.Memory < minArgon2Memory || uint64(p.Memory)*uint64(p.Time) < minArgon2MemTime {
			return weak("Argon2 memory x time below OWASP's minimum (m=7168 KiB, t=5)")
		}
		if p.KeyLen < minKeyLen {
			return weak("output shorter than 16 bytes")
		}
	case p.Scheme == Bcrypt:
		if p.Cost < minBcryptCost {
			return weak("bcrypt cost below 10")
		}
	case p.Scheme == Scrypt:
		if p.LogN < minScryptLogN {
			return weak("scrypt N below 2^15")
		}
	case p.Scheme == PBKDF2SHA256:
		if p.Iterations < minPBKDF2SHA256 {
			return weak("PBKDF2-SHA256 below 600,000 iterations")
		}
	default:
		return fmt.Errorf("%w: %v is accepted for verification only", ErrUnsupportedScheme, p.Scheme)
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
