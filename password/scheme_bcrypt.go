package password

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// bcryptScheme is bcrypt ($2a$, $2b$, $2y$), through x/crypto/bcrypt. Its
// hash string is parsed in decode.go (decodeBcrypt) and handed to
// x/crypto whole.
type bcryptScheme struct{}

// bcryptMaxPassword is where bcrypt silently truncates.
const bcryptMaxPassword = 72

// bcryptKeyLen is the length of bcrypt's output (23 bytes).
const bcryptKeyLen = 23

func (bcryptScheme) name() string                           { return "bcrypt" }
func (bcryptScheme) setParam(*Params, string, uint64) error { return errUnknownParam }
func (bcryptScheme) required() []string                     { return nil }

func (bcryptScheme) valid(p Params) error {
	if p.Cost < bcrypt.MinCost || p.Cost > bcrypt.MaxCost {
		return fmt.Errorf("bcrypt cost must be %d to %d", bcrypt.MinCost, bcrypt.MaxCost)
	}
	return nil
}

func (bcryptScheme) limit(p Params, l Limits) error {
	return over("cost", uint64(p.Cost), uint64(l.MaxBcryptCost))
}

const minBcryptCost = 10

func (bcryptScheme) weak(p Params) string {
	if p.Cost < minBcryptCost {
		return "bcrypt cost below 10"
	}
	return ""
}

func (bcryptScheme) weakerThan(p, want Params) bool { return p.Cost < want.Cost }
func (bcryptScheme) cost(Params) (int64, int)       { return 4 << 10, 1 }

func (bcryptScheme) compute(d *decoded, pw []byte, _ *lease) ([]byte, error) {
	if d.bcrypt == nil { // Hash: a new salt and hash
		b, err := bcrypt.GenerateFromPassword(pw, d.params.Cost)
		if err != nil {
			return nil, fmt.Errorf("password: bcrypt: %w", err)
		}
		return b, nil
	}
	switch err := bcrypt.CompareHashAndPassword(d.bcrypt, pw); {
	case err == nil:
		return d.bcrypt, nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return nil, nil
	default:
		return nil, &ParseError{"bcrypt", err.Error()}
	}
}

func (bcryptScheme) encode(Params) string     { return "" }
func (bcryptScheme) describe(p Params) string { return fmt.Sprintf("bcrypt cost=%d", p.Cost) }
func (bcryptScheme) writable() bool           { return true }
