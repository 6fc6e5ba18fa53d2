package password

import (
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/wardlab/ward/internal/golden"
)

var updatePepper = flag.Bool("update-pepper", false, "rewrite testdata/peppered-v1.json (only when the pepper's format changes)")

// pepperGolden is testdata/peppered-v1.json: hashes peppered with a
// keyring key (keyid=), for other languages' hashers (java/ward-core
// PasswordTest) to verify with the same keyring.
type pepperGolden struct {
	golden.Header
	Vectors []pepperVector `json:"vectors"`
}

type pepperVector struct {
	Password string `json:"password"`
	Hash     string `json:"hash"`
}

// TestPepperGolden: each peppered hash of the file verifies under its
// keyring's pepper, and not without it or with another password.
func TestPepperGolden(t *testing.T) {
	const path = "testdata/peppered-v1.json"
	ctx := context.Background()
	if *updatePepper {
		m := golden.NewMaker(t)
		g := pepperGolden{Header: m.Header(t, "password hashes peppered with the keyring's primary key (FORMAT.md, Password hashes); regenerate with go test ./password -run PepperGolden -update-pepper only when the format changes")}
		for _, p := range []Params{{Scheme: Argon2id, Memory: 64, Time: 1, Parallelism: 1}, {Scheme: PBKDF2SHA256, Iterations: 1000}, {Scheme: Scrypt, LogN: 10, R: 8, P: 1}} {
			h, err := NewHasher(Policy{Preferred: p, Pepper: m.Keyring, AllowWeak: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			hash, err := h.Hash(ctx, []byte("correct horse battery staple"))
			if err != nil {
				t.Fatal(err)
			}
			g.Vectors = append(g.Vectors, pepperVector{"correct horse battery staple", hash})
		}
		golden.Write(t, path, g)
	}
	var g pepperGolden
	golden.Read(t, path, &g)
	kr := g.Open(t)
	h, err := NewHasher(Policy{Pepper: kr, RequirePepper: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewHasher(Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Vectors {
		if _, err := h.Verify(ctx, []byte(v.Password), v.Hash); err != nil {
			t.Errorf("%s: %v", v.Hash, err)
		}
		if _, err := h.Verify(ctx, []byte(v.Password+"!"), v.Hash); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s, another password: %v", v.Hash, err)
		}
		if _, err := plain.Verify(ctx, []byte(v.Password), v.Hash); !errors.Is(err, ErrPepper) {
			t.Errorf("%s without the pepper: %v", v.Hash, err)
		}
		if id, ok, err := PepperOf(v.Hash); err != nil || !ok || id != kr.Primary().ID {
			t.Errorf("%s: peppered with %v %v %v", v.Hash, id, ok, err)
		}
	}
	if len(g.Vectors) != 3 {
		t.Fatalf("%d vectors", len(g.Vectors))
	}
}
