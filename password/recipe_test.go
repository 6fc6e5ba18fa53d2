package password

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha3"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// CONTRIBUTING.md's recipe for a password scheme, followed once with a
// throwaway scheme: PBKDF2 over SHA3-256 (crypto/pbkdf2 and crypto/sha3;
// the math is the standard library's).
//
// Step 1: a Scheme constant (params.go; here a test-only value).
const pbkdf2SHA3Test Scheme = 250

// Step 2: one file implementing the scheme interface.
type pbkdf2SHA3Scheme struct{}

func (pbkdf2SHA3Scheme) name() string { return "pbkdf2-sha3-256-test" }
func (pbkdf2SHA3Scheme) setParam(p *Params, key string, v uint64) error {
	switch key {
	case "i":
		return setParamAs(&p.Iterations, "i", v, 1<<31-1)
	case "l":
		return setParamAs(&p.KeyLen, "l", v, 1<<10)
	}
	return errUnknownParam
}
func (pbkdf2SHA3Scheme) required() []string { return []string{"i", "l"} }
func (pbkdf2SHA3Scheme) valid(p Params) error {
	if p.Iterations < 1 {
		return fmt.Errorf("needs i>=1")
	}
	return nil
}
func (pbkdf2SHA3Scheme) limit(p Params, l Limits) error {
	return firstLimit(over("iterations", uint64(p.Iterations), uint64(l.MaxPBKDF2Iterations)),
		over("iterations × output blocks", uint64(p.Iterations)*uint64((p.KeyLen+31)/32), l.MaxPBKDF2Work))
}
func (pbkdf2SHA3Scheme) weak(p Params) string {
	if p.Iterations < 600_000 {
		return "below 600,000 iterations"
	}
	return ""
}
func (pbkdf2SHA3Scheme) weakerThan(p, want Params) bool { return p.Iterations < want.Iterations }
func (pbkdf2SHA3Scheme) cost(Params) (int64, int)       { return 1 << 10, 1 }
func (pbkdf2SHA3Scheme) compute(d *decoded, pw []byte, _ *lease) ([]byte, error) {
	return pbkdf2.Key(sha3.New256, string(pw), d.salt, d.params.Iterations, d.params.KeyLen)
}
func (pbkdf2SHA3Scheme) encode(p Params) string {
	return fmt.Sprintf("i=%d,l=%d", p.Iterations, p.KeyLen)
}
func (s pbkdf2SHA3Scheme) describe(p Params) string {
	return fmt.Sprintf("%s i=%d", s.name(), p.Iterations)
}
func (pbkdf2SHA3Scheme) writable() bool { return true }

// TestSchemeRecipe: with step 3 (one line in the schemes registry) the
// scheme hashes, verifies, round-trips its PHC form, flags weak stored
// parameters for rehash and is held to the limits before any work.
func TestSchemeRecipe(t *testing.T) {
	schemes[pbkdf2SHA3Test] = pbkdf2SHA3Scheme{} // step 3
	defer delete(schemes, pbkdf2SHA3Test)

	ctx := context.Background()
	p := Params{Scheme: pbkdf2SHA3Test, Iterations: 1000, SaltLen: 16, KeyLen: 32}
	h := newHasher(t, Policy{Preferred: p, AllowWeak: true}) // (a scheme of one's own is not approved in the FIPS 140-3 mode)
	enc, err := h.Hash(ctx, []byte("pw"))
	if err != nil || !strings.HasPrefix(enc, "$pbkdf2-sha3-256-test$i=1000,l=32$") {
		t.Fatal(enc, err)
	}
	if res, err := h.Verify(ctx, []byte("pw"), enc); err != nil || res.Params.Iterations != 1000 || res.NeedsRehash {
		t.Fatal(res, err)
	}
	if _, err := h.Verify(ctx, []byte("wrong"), enc); !errors.Is(err, ErrMismatch) {
		t.Fatal(err)
	}
	stronger, _ := NewHasher(Policy{Preferred: Params{Scheme: pbkdf2SHA3Test, Iterations: 2000, SaltLen: 16, KeyLen: 32}, AllowWeak: true}, nil)
	if res, err := stronger.Verify(ctx, []byte("pw"), enc); err != nil || !res.NeedsRehash {
		t.Fatal("a weaker stored hash not flagged for rehash", res, err)
	}
	huge := strings.Replace(enc, "i=1000", "i=2000000000", 1)
	var le *LimitError
	if _, err := h.Verify(ctx, []byte("pw"), huge); !errors.As(err, &le) {
		t.Fatalf("over the limits: %v", err)
	}
	if _, err := NewHasher(Policy{Preferred: p}, nil); err == nil {
		t.Fatal("weak parameters accepted without AllowWeak")
	}
}
