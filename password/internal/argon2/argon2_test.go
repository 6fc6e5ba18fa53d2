package argon2

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	xargon2 "golang.org/x/crypto/argon2"
)

// rfcVectors are RFC 9106 §5's test vectors (version 0x13): password 32
// bytes of 0x01, salt 16 of 0x02, secret 8 of 0x03, associated data 12 of
// 0x04, t=3, m=32 KiB, p=4, a 32-byte tag. The pre-hashing digests (H0)
// are the RFC's too.
var rfcVectors = []struct {
	variant Variant
	h0, tag string
}{
	{Argon2d, "b8819791a0359660bb7709c85fa48f04d5d82c05c5f215ccdb885491717cf757082c28b951be381410b5fc2eb7274033b9fdc7ae672bcaac5d179097a4af3109",
		"512b391b6f1162975371d30919734294f868e3be3984f3c1a13a4db9fabe4acb"},
	{Argon2i, "c46065815276a0b3e731731c902f1fd80cf776907fbb7b6a5ca72e7b56011feeca446c86dd75b9469a5e6879dec4b72d0863fb939b982e5f397cc7d164fddaa9",
		"c814d9d1dc7f37aa13f0d77f2494bda1c8de6b016dd388d29952a4c4672b6ce8"},
	{Argon2id, "2889de487eb42ae500c0007ed9252f1069eadec40d5765b485de6dc2437a67b8546a2f0acc1a0882db8fcf74714b472e94df421a5da1112ffa11434370a1e997",
		"0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"},
}

func rfcParams(v Variant) (pw, salt []byte, p Params) {
	return bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16),
		Params{Variant: v, Time: 3, Memory: 32, Lanes: 4, KeyLen: 32, Secret: bytes.Repeat([]byte{3}, 8), AssociatedData: bytes.Repeat([]byte{4}, 12)}
}

// forEachImpl runs fn with every implementation of G this machine can run.
func forEachImpl(t *testing.T, fn func(t *testing.T)) {
	saved := impl
	defer func() { impl = saved }()
	for _, im := range available() {
		impl = im
		t.Run(im.name, fn)
	}
}

func TestRFC9106(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		for _, v := range rfcVectors {
			pw, salt, p := rfcParams(v.variant)
			h0 := initialHash(pw, salt, p)
			if got := hex.EncodeToString(h0[:64]); got != v.h0 {
				t.Fatalf("variant %d: H0 %s, want %s", v.variant, got, v.h0)
			}
			tag, err := Key(pw, salt, p, make([]Block, p.MemoryBlocks()))
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(tag); got != v.tag {
				t.Fatalf("variant %d: tag %s, want %s", v.variant, got, v.tag)
			}
		}
	})
}

// TestDifferential compares with x/crypto/argon2 (Argon2i, Argon2id; the
// integration module checks Argon2d against go-crypt's) over random
// parameters, passwords and salts, with
// dirty reused memory.
func TestDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 60
	if testing.Short() {
		n = 15
	}
	forEachImpl(t, func(t *testing.T) {
		mem := make([]Block, 4096+3*8)
		for i := range mem { // garbage: Key must not depend on it
			mem[i][i%128] = r.Uint64()
		}
		for i := range n {
			pw := make([]byte, r.IntN(80))
			salt := make([]byte, 8+r.IntN(40))
			fillRand(r, pw)
			fillRand(r, salt)
			lanes := uint32(1 + r.IntN(6))
			p := Params{Variant: []Variant{Argon2id, Argon2i}[i%2], Time: uint32(1 + r.IntN(4)), Lanes: lanes,
				Memory: 8*lanes + uint32(r.IntN(600)), KeyLen: uint32(4 + r.IntN(150))}
			got, err := Key(pw, salt, p, mem)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			switch p.Variant {
			case Argon2id:
				want = xargon2.IDKey(pw, salt, p.Time, p.Memory, uint8(lanes), p.KeyLen)
			case Argon2i:
				want = xargon2.Key(pw, salt, p.Time, p.Memory, uint8(lanes), p.KeyLen)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%+v: %x, want %x", p, got, want)
			}
		}
	})
}

func fillRand(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// TestImplementationsAgree runs every G against the portable one on
// random blocks, in both modes and with aliased arguments.
func TestImplementationsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, im := range available() {
		for range 200 {
			var x, y, out Block
			for i := range x {
				x[i], y[i], out[i] = r.Uint64(), r.Uint64(), r.Uint64()
			}
			for _, xor := range []bool{false, true} {
				want, got := out, out
				gGeneric(&want, &x, &y, xor)
				im.g(&got, &x, &y, xor)
				if got != want {
					t.Fatalf("%s (xor %v) differs from generic", im.name, xor)
				}
				wantAlias, gotAlias := y, y
				gGeneric(&wantAlias, &x, &wantAlias, xor)
				im.g(&gotAlias, &x, &gotAlias, xor)
				if gotAlias != wantAlias {
					t.Fatalf("%s (xor %v) with out == y differs", im.name, xor)
				}
			}
		}
	}
}

func TestBadParams(t *testing.T) {
	salt := make([]byte, 16)
	mem := make([]Block, 64)
	for _, p := range []Params{
		{Variant: 3, Time: 1, Memory: 8, Lanes: 1, KeyLen: 32},
		{Variant: Argon2id, Time: 0, Memory: 8, Lanes: 1, KeyLen: 32},
		{Variant: Argon2id, Time: 1, Memory: 8, Lanes: 0, KeyLen: 32},
		{Variant: Argon2id, Time: 1, Memory: 15, Lanes: 2, KeyLen: 32},
		{Variant: Argon2id, Time: 1, Memory: 8, Lanes: 1, KeyLen: 3},
		{Variant: Argon2id, Time: 1, Memory: 128, Lanes: 1, KeyLen: 32}, // more than mem
	} {
		if _, err := Key(nil, salt, p, mem); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := Key(nil, salt[:7], Params{Variant: Argon2id, Time: 1, Memory: 8, Lanes: 1, KeyLen: 32}, mem); err == nil {
		t.Error("7-byte salt accepted")
	}
}

// FuzzKey compares with x/crypto/argon2 on fuzzed inputs and small
// parameters.
func FuzzKey(f *testing.F) {
	f.Add([]byte("password"), []byte("saltsalt"), uint8(2), uint8(1), uint16(64), uint8(32))
	mem := make([]Block, 1024)
	f.Fuzz(func(t *testing.T, pw, salt []byte, tm, lanes uint8, m uint16, keyLen uint8) {
		p := Params{Variant: Argon2id, Time: uint32(tm%4) + 1, Lanes: uint32(lanes%4) + 1, KeyLen: uint32(keyLen%200) + 4}
		p.Memory = 8*p.Lanes + uint32(m%900)
		if len(salt) < 8 {
			return
		}
		got, err := Key(pw, salt, p, mem)
		if err != nil {
			t.Fatal(err)
		}
		if want := xargon2.IDKey(pw, salt, p.Time, p.Memory, uint8(p.Lanes), p.KeyLen); !bytes.Equal(got, want) {
			t.Fatalf("%+v differs", p)
		}
	})
}

func TestImplName(t *testing.T) {
	names := []string{}
	for _, im := range available() {
		names = append(names, im.name)
	}
	if !strings.Contains(strings.Join(names, ","), Impl()) {
		t.Fatalf("%s not among %v", Impl(), names)
	}
	t.Log("available:", fmt.Sprint(names), "chosen:", Impl())
}
