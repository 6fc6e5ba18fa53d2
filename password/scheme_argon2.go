package password

import (
	"fmt"

	"github.com/wardlab/ward/password/internal/argon2"
)

// argon2Scheme is Argon2id, Argon2i or Argon2d (RFC 9106, version 0x13),
// computed by ward's own core (internal/argon2) in memory leased from the
// limiter.
type argon2Scheme struct{ s Scheme }

func (a argon2Scheme) name() string {
	return map[Scheme]string{Argon2id: "argon2id", Argon2i: "argon2i", Argon2d: "argon2d"}[a.s]
}

func (a argon2Scheme) variant() argon2.Variant {
	return map[Scheme]argon2.Variant{Argon2id: argon2.Argon2id, Argon2i: argon2.Argon2i, Argon2d: argon2.Argon2d}[a.s]
}

func (argon2Scheme) setParam(p *Params, key string, v uint64) error {
	switch key {
	case "m":
		return setParamAs(&p.Memory, "m", v, 1<<32-1)
	case "t":
		return setParamAs(&p.Time, "t", v, 1<<32-1)
	case "p":
		return setParamAs(&p.Parallelism, "p", v, 255)
	}
	return errUnknownParam
}

func (argon2Scheme) required() []string { return []string{"m", "t", "p"} }

func (argon2Scheme) valid(p Params) error {
	if p.Time < 1 || p.Parallelism < 1 || p.Memory < 8*uint32(p.Parallelism) {
		return fmt.Errorf("Argon2 needs t>=1, p>=1 and m>=8p")
	}
	if p.SaltLen != 0 && p.SaltLen < 8 {
		return fmt.Errorf("Argon2 needs a salt of at least 8 bytes")
	}
	return nil
}

func (argon2Scheme) limit(p Params, l Limits) error {
	return firstLimit(
		over("m", uint64(p.Memory), uint64(l.MaxArgon2Memory)),
		over("t", uint64(p.Time), uint64(l.MaxArgon2Time)),
		over("p", uint64(p.Parallelism), uint64(l.MaxArgon2Parallelism)),
		over("m·t (KiB·passes)", uint64(p.Memory)*uint64(p.Time), l.MaxArgon2Work))
}

// Minimums below which Hash refuses to write Argon2 unless the policy
// sets AllowWeak: OWASP's smallest option, m=7168 KiB with t=5, and the
// equivalence line m·t >= 7168·5.
const (
	minArgon2Memory  = 7168
	minArgon2MemTime = 7168 * 5
)

func (a argon2Scheme) weak(p Params) string {
	if a.s == Argon2d {
		return "argon2d is accepted for verification only"
	}
	if p.Memory < minArgon2Memory || uint64(p.Memory)*uint64(p.Time) < minArgon2MemTime {
		return "Argon2 memory x time below OWASP's minimum (m=7168 KiB, t=5)"
	}
	return ""
}

func (argon2Scheme) weakerThan(p, want Params) bool {
	return p.Memory < want.Memory || p.Time < want.Time
}

func (argon2Scheme) cost(p Params) (int64, int) {
	lanes := max(1, uint32(p.Parallelism))
	blocks := argon2.Params{Memory: p.Memory, Lanes: lanes}.MemoryBlocks()
	return int64(blocks) * argon2.BlockSize, int(lanes)
}

func (a argon2Scheme) compute(d *decoded, pw []byte, l *lease) ([]byte, error) {
	p := argon2.Params{Variant: a.variant(), Time: d.params.Time, Memory: d.params.Memory,
		Lanes: uint32(d.params.Parallelism), KeyLen: uint32(d.params.KeyLen)}
	out, err := argon2.Key(pw, d.saltWithSuffix(), p, l.blocks(p.MemoryBlocks()))
	if err != nil {
		return nil, &ParseError{a.name(), err.Error()}
	}
	return out, nil
}

func (argon2Scheme) encode(p Params) string {
	return fmt.Sprintf("v=19$m=%d,t=%d,p=%d", p.Memory, p.Time, p.Parallelism)
}

func (a argon2Scheme) describe(p Params) string {
	return fmt.Sprintf("%s m=%d,t=%d,p=%d", a.name(), p.Memory, p.Time, p.Parallelism)
}

func (a argon2Scheme) writable() bool { return a.s != Argon2d }
