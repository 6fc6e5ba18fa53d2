package avx

import (
	"crypto/hkdf"
	"crypto/sha256"
	"testing"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
)

// BenchmarkAfterCircl runs a circl ML-KEM-512 decapsulation followed by
// an HKDF expansion (SHA-NI where the CPU has it), without and with
// ZeroUpper in between, and the decapsulation alone: the difference
// between a pair and "decapsulate" is the expansion's cost after circl.
func BenchmarkAfterCircl(b *testing.B) {
	s := mlkem512.Scheme()
	pk, sk, _ := s.GenerateKeyPair()
	ct, _, _ := s.Encapsulate(pk)
	prk := make([]byte, 32)
	b.Run("decapsulate", func(b *testing.B) {
		for b.Loop() {
			s.Decapsulate(sk, ct)
			ZeroUpper()
		}
	})
	b.Run("decapsulate+expand", func(b *testing.B) {
		for b.Loop() {
			s.Decapsulate(sk, ct)
			hkdf.Expand(sha256.New, prk, "finished", 32)
		}
	})
	b.Run("decapsulate+ZeroUpper+expand", func(b *testing.B) {
		for b.Loop() {
			s.Decapsulate(sk, ct)
			ZeroUpper()
			hkdf.Expand(sha256.New, prk, "finished", 32)
		}
	})
}

func TestZeroUpper(t *testing.T) {
	ZeroUpper() // must not fault on any CPU
}
