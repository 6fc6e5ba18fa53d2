package password

import (
	"fmt"

	"golang.org/x/crypto/scrypt"
)

// scryptScheme is scrypt (RFC 7914) through x/crypto/scrypt.
type scryptScheme struct{}

func (scryptScheme) name() string { return "scrypt" }

func (scryptScheme) setParam(p *Params, key string, v uint64) error {
	switch key {
	case "ln":
		return setParamAs(&p.LogN, "ln", v, 63)
	case "r":
		return setParamAs(&p.R, "r", v, 1<<30)
	case "p":
		return setParamAs(&p.P, "p", v, 1<<30)
	}
	return errUnknownParam
}

func (scryptScheme) required() []string { return []string{"ln", "r", "p"} }

func (scryptScheme) valid(p Params) error {
	if p.LogN < 1 || p.LogN > 63 || p.R < 1 || p.P < 1 {
		return fmt.Errorf("scrypt needs ln in 1..63, r>=1, p>=1")
	}
	return nil
}

// scryptWork is N·r·p, which the time of one hash is proportional to.
// It saturates rather than overflowing.
func scryptWork(p Params) uint64 {
	if p.LogN > 40 || p.R > 1<<20 || p.P > 1<<20 {
		return 1<<64 - 1
	}
	return (uint64(1) << p.LogN) * uint64(p.R) * uint64(p.P)
}

func (s scryptScheme) limit(p Params, l Limits) error {
	return firstLimit(
		over("ln", uint64(p.LogN), uint64(l.MaxScryptLogN)),
		over("p", uint64(p.P), uint64(l.MaxScryptP)),
		over("r", uint64(p.R), 1<<20),
		over("memory (128·N·r)", 128*(uint64(1)<<min(p.LogN, 40))*uint64(p.R), uint64(l.MaxScryptMemory)),
		over("N·r·p", scryptWork(p), l.MaxScryptWork))
}

const minScryptLogN = 15

func (scryptScheme) weak(p Params) string {
	if p.LogN < minScryptLogN {
		return "scrypt N below 2^15"
	}
	return ""
}

func (scryptScheme) weakerThan(p, want Params) bool { return p.LogN < want.LogN || p.R < want.R }

func (scryptScheme) cost(p Params) (int64, int) {
	if p.LogN > 40 || p.R > 1<<20 {
		return 1 << 62, 1 // absurd: over any budget
	}
	return 128*int64(p.R)*(int64(1)<<p.LogN) + 128*int64(p.R)*int64(p.P), 1
}

func (scryptScheme) compute(d *decoded, pw []byte, _ *lease) ([]byte, error) {
	out, err := scrypt.Key(pw, d.saltWithSuffix(), 1<<d.params.LogN, d.params.R, d.params.P, d.params.KeyLen)
	if err != nil {
		return nil, &ParseError{"scrypt", err.Error()}
	}
	return out, nil
}

func (scryptScheme) encode(p Params) string { return fmt.Sprintf("ln=%d,r=%d,p=%d", p.LogN, p.R, p.P) }
func (scryptScheme) describe(p Params) string {
	return fmt.Sprintf("scrypt ln=%d,r=%d,p=%d", p.LogN, p.R, p.P)
}
func (scryptScheme) writable() bool { return true }
