package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/go-crypt/crypt"
	xdargon2 "github.com/go-crypt/x/argon2"

	"github.com/wardlab/ward/password"
)

type vector struct {
	Source, Tool, Password, Hash string
}

// loadVectors reads the password package's vectors (made by real tools,
// password/testdata/README.md says which).
func loadVectors(t *testing.T) []vector {
	b, err := os.ReadFile("../password/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func newHasher(t *testing.T, p password.Policy) *password.Hasher {
	t.Helper()
	h, err := password.NewHasher(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDifferentialGoCrypt checks ward's hashes against an independent
// decoder, github.com/go-crypt/crypt, and the PHC vectors both ways.
func TestDifferentialGoCrypt(t *testing.T) {
	dec, err := crypt.NewDecoderAll()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pw := "correct horse battery staple"
	for _, p := range []password.Params{
		{Scheme: password.Argon2id, Memory: 256, Time: 2, Parallelism: 2},
		{Scheme: password.Argon2i, Memory: 256, Time: 2, Parallelism: 1},
		{Scheme: password.Scrypt, LogN: 10, R: 8, P: 1},
		{Scheme: password.Bcrypt, Cost: 5},
	} {
		h := newHasher(t, password.Policy{Preferred: p, AllowWeak: true})
		enc, err := h.Hash(ctx, []byte(pw))
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decode(enc)
		if err != nil {
			t.Fatalf("go-crypt cannot decode %s: %v", enc, err)
		}
		if !d.Match(pw) || d.Match(pw+"x") {
			t.Fatalf("go-crypt disagrees on %s", enc)
		}
	}
	for _, v := range loadVectors(t) {
		if !strings.HasPrefix(v.Hash, "$argon2") && !strings.HasPrefix(v.Hash, "$2") && !strings.HasPrefix(v.Hash, "$scrypt") {
			continue
		}
		d, err := dec.Decode(v.Hash)
		if err != nil {
			t.Fatalf("go-crypt: %v", err)
		}
		if !d.Match(v.Password) {
			t.Fatalf("go-crypt rejects vector %s", v.Source)
		}
	}
}

// TestArgon2dDifferential verifies Argon2d hashes computed by go-crypt's
// independent Argon2d over random parameters, passwords and salts,
// through ward's public Verify (decoder and core). x/crypto has no
// Argon2d; Argon2id and Argon2i are checked against it inside the core's
// own tests.
func TestArgon2dDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := newHasher(t, password.Policy{AllowWeak: true})
	ctx := context.Background()
	b64 := base64.RawStdEncoding
	for range 40 {
		pw := make([]byte, 1+r.IntN(80))
		salt := make([]byte, 8+r.IntN(40))
		for i := range pw {
			pw[i] = byte(r.Uint32())
		}
		for i := range salt {
			salt[i] = byte(r.Uint32())
		}
		lanes := uint32(1 + r.IntN(6))
		tcost := uint32(1 + r.IntN(4))
		mem := 8*lanes + uint32(r.IntN(600))
		keyLen := uint32(16 + r.IntN(100))
		key := xdargon2.DKey(pw, salt, tcost, mem, lanes, keyLen)
		enc := fmt.Sprintf("$argon2d$v=19$m=%d,t=%d,p=%d$%s$%s", mem, tcost, lanes, b64.EncodeToString(salt), b64.EncodeToString(key))
		if _, err := h.Verify(ctx, pw, enc); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if _, err := h.Verify(ctx, append(pw, 'x'), enc); !errors.Is(err, password.ErrMismatch) {
			t.Fatalf("%s: wrong password: %v", enc, err)
		}
	}
}
