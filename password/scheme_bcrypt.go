package password

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// bcryptScheme is bcrypt ($2a$, $2b$, $2y$), through x/crypto/bcrypt. Its
// hash string is checked here (decodeBcrypt), wherever it appears (alone,
// in Django's or Spring's wrappers), and handed to x/crypto whole.
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

// bcrypt writes its own string ($2b$NN$…), of fixed lengths, reads at most
// 72 bytes of a password, and compares inside x/crypto/bcrypt.
var _ ownFormat = bcryptScheme{}

func (bcryptScheme) lengths() (salt, key int) { return 16, bcryptKeyLen }
func (bcryptScheme) maxPassword() int         { return bcryptMaxPassword }
func (bcryptScheme) matched(out []byte) bool  { return out != nil }

func (bcryptScheme) encode(Params) string     { return "" }
func (bcryptScheme) describe(p Params) string { return fmt.Sprintf("bcrypt cost=%d", p.Cost) }
func (bcryptScheme) writable() bool           { return true }

// bcryptAlphabet is bcrypt's base64 alphabet.
const bcryptAlphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// decodeBcrypt checks the modular crypt form $2a$NN$<53 chars> before
// x/crypto/bcrypt sees it. $2x$ (the buggy crypt_blowfish variant) is
// refused.
func decodeBcrypt(s, format string) (*decoded, error) {
	bad := func(r string) error { return &ParseError{format, r} }
	if len(s) != 60 {
		return nil, bad("bcrypt hashes are 60 characters")
	}
	if s[0] != '$' || s[1] != '2' || s[3] != '$' || s[6] != '$' {
		return nil, bad("not $2?$NN$…")
	}
	switch s[2] {
	case 'a', 'b', 'y':
	default:
		return nil, fmt.Errorf("%w: bcrypt variant $2%c$", ErrUnsupportedScheme, s[2])
	}
	cost, err := parseUint(s[4:6], 8)
	if err != nil || cost < 4 || cost > 31 {
		return nil, bad("cost must be 04 to 31")
	}
	for i := 7; i < 60; i++ {
		if !strings.ContainsRune(bcryptAlphabet, rune(s[i])) {
			return nil, bad("invalid character in salt or hash")
		}
	}
	return &decoded{format: format, bcrypt: []byte(s), params: Params{Scheme: Bcrypt, Cost: int(cost), SaltLen: 16, KeyLen: bcryptKeyLen}}, nil
}
