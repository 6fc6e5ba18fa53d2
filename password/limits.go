package password

// Limits are hard caps on the parameters of hashes Verify will compute. A
// stored hash is input: without caps, a hash string with m=4194304 would
// make the server allocate 4 GiB. Hashes over a limit are refused with a
// [LimitError] before any work is done.
type Limits struct {
	MaxArgon2Memory      uint32 // KiB (default 262144 = 256 MiB)
	MaxArgon2Time        uint32 // default 16
	MaxArgon2Parallelism uint8  // default 16
	MaxBcryptCost        int    // default 15
	MaxScryptLogN        uint8  // default 20
	MaxScryptMemory      int64  // bytes, 128·N·r (default 256 MiB)
	MaxScryptP           int    // default 16
	MaxPBKDF2Iterations  int    // default 5,000,000
	MaxSaltLen           int    // bytes (default 64)
	MaxKeyLen            int    // bytes (default 128)
	// MaxPasswordLen is the longest password accepted, in bytes (default
	// 1024). Longer ones are refused with ErrPasswordTooLong, so an
	// attacker cannot make PBKDF2 or the pepper hash megabytes.
	MaxPasswordLen int
}

// DefaultLimits are used for zero fields of a policy's Limits.
var DefaultLimits = Limits{
	MaxArgon2Memory:      256 << 10,
	MaxArgon2Time:        16,
	MaxArgon2Parallelism: 16,
	MaxBcryptCost:        15,
	MaxScryptLogN:        20,
	MaxScryptMemory:      256 << 20,
	MaxScryptP:           16,
	MaxPBKDF2Iterations:  5_000_000,
	MaxSaltLen:           64,
	MaxKeyLen:            128,
	MaxPasswordLen:       1024,
}

// maxEncodedLen caps the encoded hash string itself.
const maxEncodedLen = 1024

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	return Limits{
		MaxArgon2Memory:      or(l.MaxArgon2Memory, d.MaxArgon2Memory),
		MaxArgon2Time:        or(l.MaxArgon2Time, d.MaxArgon2Time),
		MaxArgon2Parallelism: or(l.MaxArgon2Parallelism, d.MaxArgon2Parallelism),
		MaxBcryptCost:        or(l.MaxBcryptCost, d.MaxBcryptCost),
		MaxScryptLogN:        or(l.MaxScryptLogN, d.MaxScryptLogN),
		MaxScryptMemory:      or(l.MaxScryptMemory, d.MaxScryptMemory),
		MaxScryptP:           or(l.MaxScryptP, d.MaxScryptP),
		MaxPBKDF2Iterations:  or(l.MaxPBKDF2Iterations, d.MaxPBKDF2Iterations),
		MaxSaltLen:           or(l.MaxSaltLen, d.MaxSaltLen),
		MaxKeyLen:            or(l.MaxKeyLen, d.MaxKeyLen),
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
	over := func(name string, v, max uint64) error {
		if v > max {
			return &LimitError{Param: name, Value: v, Max: max}
		}
		return nil
	}
	errs := []error{
		over("salt length", uint64(p.SaltLen), uint64(l.MaxSaltLen)),
		over("hash length", uint64(p.KeyLen), uint64(l.MaxKeyLen)),
	}
	switch {
	case p.Scheme.isArgon2():
		errs = append(errs,
			over("m", uint64(p.Memory), uint64(l.MaxArgon2Memory)),
			over("t", uint64(p.Time), uint64(l.MaxArgon2Time)),
			over("p", uint64(p.Parallelism), uint64(l.MaxArgon2Parallelism)))
	case p.Scheme == Bcrypt:
		errs = append(errs, over("cost", uint64(p.Cost), uint64(l.MaxBcryptCost)))
	case p.Scheme == Scrypt:
		errs = append(errs,
			over("ln", uint64(p.LogN), uint64(l.MaxScryptLogN)),
			over("p", uint64(p.P), uint64(l.MaxScryptP)),
			over("memory (128·N·r)", uint64(p.MemoryBytes()), uint64(l.MaxScryptMemory)))
	case p.Scheme.isPBKDF2():
		errs = append(errs, over("iterations", uint64(p.Iterations), uint64(l.MaxPBKDF2Iterations)))
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
