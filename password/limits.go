package password

// Limits are hard caps on the hashes Verify will compute. A stored hash is
// input: without caps, a hash string with m=4194304 would make the server
// allocate 4 GiB, and one within every per-parameter cap could still ask
// for seconds of work. Each parameter and each scheme's total work (m·t for
// Argon2, N·r·p for scrypt, iterations × output blocks for PBKDF2) is
// capped; hashes over a limit are refused with a [LimitError] before any
// work is done. The defaults admit every preset ward offers (the strongest
// is [Strong]: 64 MiB, t=3, p=4) and the common legacy formats, and
// nothing far beyond.
type Limits struct {
	MaxArgon2Memory      uint32 // KiB (default 131072 = 128 MiB)
	MaxArgon2Time        uint32 // default 16
	MaxArgon2Parallelism uint8  // default 16
	// MaxArgon2Work caps m·t in KiB·passes (default 262144 = 256 MiB·3/3:
	// Strong's 64 MiB × 3 passes fits with a third to spare).
	MaxArgon2Work   uint64
	MaxBcryptCost   int   // default 13 (Bcrypt12's 12, doubled once)
	MaxScryptLogN   uint8 // default 20
	MaxScryptMemory int64 // bytes, 128·N·r (default 128 MiB: Scrypt17's)
	MaxScryptP      int   // default 16
	// MaxScryptWork caps N·r·p (default 2^21, twice Scrypt17's).
	MaxScryptWork       uint64
	MaxPBKDF2Iterations int // default 2,000,000
	// MaxPBKDF2Work caps iterations × output blocks (default 2,000,000:
	// twice Django's 1,000,000 one-block PBKDF2-SHA256).
	MaxPBKDF2Work uint64
	MaxSaltLen    int // bytes (default 64)
	MaxKeyLen     int // bytes (default 128)
	// MinKeyLen is the shortest hash output Verify accepts (default 16):
	// a 1-byte hash would match one wrong password in 256.
	MinKeyLen int
	// MaxPasswordLen is the longest password accepted, in bytes (default
	// 1024). Longer ones are refused with ErrPasswordTooLong, so an
	// attacker cannot make PBKDF2 or the pepper hash megabytes.
	MaxPasswordLen int
}

// DefaultLimits returns the limits used for zero fields of a policy's
// Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxArgon2Memory:      128 << 10,
		MaxArgon2Time:        16,
		MaxArgon2Parallelism: 16,
		MaxArgon2Work:        256 << 10,
		MaxBcryptCost:        13,
		MaxScryptLogN:        20,
		MaxScryptMemory:      128 << 20,
		MaxScryptP:           16,
		MaxScryptWork:        1 << 21,
		MaxPBKDF2Iterations:  2_000_000,
		MaxPBKDF2Work:        2_000_000,
		MaxSaltLen:           64,
		MaxKeyLen:            128,
		MinKeyLen:            minKeyLen,
		MaxPasswordLen:       1024,
	}
}

// maxEncodedLen caps the encoded hash string itself.
const maxEncodedLen = 1024

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		MaxArgon2Memory:      or(l.MaxArgon2Memory, d.MaxArgon2Memory),
		MaxArgon2Time:        or(l.MaxArgon2Time, d.MaxArgon2Time),
		MaxArgon2Parallelism: or(l.MaxArgon2Parallelism, d.MaxArgon2Parallelism),
		MaxArgon2Work:        or(l.MaxArgon2Work, d.MaxArgon2Work),
		MaxBcryptCost:        or(l.MaxBcryptCost, d.MaxBcryptCost),
		MaxScryptLogN:        or(l.MaxScryptLogN, d.MaxScryptLogN),
		MaxScryptMemory:      or(l.MaxScryptMemory, d.MaxScryptMemory),
		MaxScryptP:           or(l.MaxScryptP, d.MaxScryptP),
		MaxScryptWork:        or(l.MaxScryptWork, d.MaxScryptWork),
		MaxPBKDF2Iterations:  or(l.MaxPBKDF2Iterations, d.MaxPBKDF2Iterations),
		MaxPBKDF2Work:        or(l.MaxPBKDF2Work, d.MaxPBKDF2Work),
		MaxSaltLen:           or(l.MaxSaltLen, d.MaxSaltLen),
		MaxKeyLen:            or(l.MaxKeyLen, d.MaxKeyLen),
		MinKeyLen:            or(l.MinKeyLen, d.MinKeyLen),
		MaxPasswordLen:       or(l.MaxPasswordLen, d.MaxPasswordLen),
	}
}

// or returns v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// check returns a LimitError for the first parameter over its limit.
func (l Limits) check(p Params) error {
	impl, err := schemeOf(p.Scheme)
	if err != nil {
		return err
	}
	minOut := l.MinKeyLen
	if own, ok := ownFormatOf(p.Scheme); ok {
		_, key := own.lengths()
		minOut = min(minOut, key)
	}
	return firstLimit(
		over("salt length", uint64(p.SaltLen), uint64(l.MaxSaltLen)),
		over("hash length", uint64(p.KeyLen), uint64(l.MaxKeyLen)),
		under("hash length", uint64(p.KeyLen), uint64(minOut)),
		impl.limit(p, l))
}
