package keycore

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

// FuzzOpen feeds arbitrary bytes to the ciphertext parser and Open: they
// must fail cleanly, never panic, and never return plaintext for input that
// was not sealed.
func FuzzOpen(f *testing.F) {
	kr, _ := New(AES256GCM)
	ct, _ := kr.Seal([]byte("seed value"), []byte("ctx"))
	f.Add(ct, []byte("ctx"))
	f.Add(ct[:headerSize], []byte(""))
	f.Add([]byte{1, 3, 0, 0, 0, 1}, []byte("x"))
	f.Add([]byte{2, 2, 0, 0, 0, 1, 0, 0, 0, 0}, []byte("x"))
	f.Fuzz(func(t *testing.T, data, context []byte) {
		pt, err := kr.Open(data, context)
		if err == nil && !(bytes.Equal(data, ct) && string(context) == "ctx") {
			t.Fatalf("forged ciphertext opened: %q", pt)
		}
		if err != nil && pt != nil {
			t.Fatal("plaintext returned with error")
		}
		if s := string(data); IsText(data) {
			DecodeText(s)
		}
	})
}

// FuzzRoundTrip checks that every plaintext and context survives a round
// trip, in binary and text form, under every algorithm.
func FuzzRoundTrip(f *testing.F) {
	rings := map[Algorithm]*Keyring{}
	for _, a := range Algorithms() {
		rings[a], _ = New(a)
	}
	f.Add([]byte("hello"), []byte("ctx"), uint8(1))
	f.Fuzz(func(t *testing.T, pt, context []byte, a uint8) {
		kr := rings[Algorithms()[int(a)%3]]
		ct, err := kr.Seal(pt, context)
		if err != nil {
			t.Fatal(err)
		}
		bin, err := DecodeText(EncodeText(ct))
		if err != nil {
			t.Fatal(err)
		}
		got, err := kr.Open(bin, context)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzUnmarshal feeds arbitrary documents to the keyring loader.
func FuzzUnmarshal(f *testing.F) {
	mk := local.Generate()
	kr, _ := New(AES256GCM)
	data, _ := kr.Marshal(context.Background(), mk)
	f.Add(data)
	if v1, err := os.ReadFile("../../keyring/testdata/v1-cli/local.json"); err == nil {
		f.Add(v1)
	}
	f.Add([]byte(`{"format":"ward-keyring/v1"}`))
	f.Add([]byte(`{"format":"ward-keyring/v2","wrap":{"provider":"local"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kr, err := Unmarshal(context.Background(), data, mk)
		if err == nil && kr.Primary().ID == 0 {
			t.Fatal("keyring without a primary key accepted")
		}
	})
}

// FuzzOpenScope feeds arbitrary bytes to a scope's Open (ciphertext v4):
// it fails cleanly, and returns plaintext only for the sealed value (whose
// 4 check bytes, outside the associated data, may differ).
func FuzzOpenScope(f *testing.F) {
	kr, _ := New(AES256GCM)
	s := kr.Scope(FieldScope("t", "c"))
	ct, _ := s.Seal([]byte("seed value"), []byte("ctx"))
	f.Add(ct, []byte("ctx"))
	f.Add(ct[:headerSize], []byte(""))
	f.Add([]byte{4, 1, 2, 0, 0, 0, 1}, []byte("x"))
	f.Add([]byte{4, 2, 2, 0, 0, 0, 1, 0, 0, 0, 0}, []byte("x"))
	f.Fuzz(func(t *testing.T, data, context []byte) {
		pt, err := s.Open(data, context)
		if err == nil {
			same := len(data) == len(ct) && bytes.Equal(data[:adHead], ct[:adHead]) && bytes.Equal(data[headerSize:], ct[headerSize:])
			if !same || string(context) != "ctx" {
				t.Fatalf("forged ciphertext opened: %q", pt)
			}
		}
		if err != nil && pt != nil {
			t.Fatal("plaintext returned with error")
		}
		s.ContextMatches(data, context)
	})
}

// FuzzRemnant feeds arbitrary values to RemnantOf: it never panics, and
// what it reports of a header is read from the value's own first bytes.
func FuzzRemnant(f *testing.F) {
	kr, _ := New(AES256GCM)
	ct, _ := kr.Seal([]byte("seed value"), []byte("ctx"))
	text := EncodeText(ct)
	f.Add(ct[:7])
	f.Add([]byte(text[:len(text)-1]))
	f.Add([]byte(text[:12]))
	f.Add([]byte("w4:"))
	f.Add([]byte("w1:AQIAAAAB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := RemnantOf(b)
		if !ok {
			return
		}
		v := b[0]
		if IsText(b) {
			v = b[1] - '0'
		}
		if r.Version != v || v < version1 || v > version4 {
			t.Fatalf("%q: version %d", b, r.Version)
		}
	})
}
