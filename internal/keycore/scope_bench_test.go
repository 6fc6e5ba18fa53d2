package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"
)

// BenchmarkV4Parts splits a 64-byte v4 seal into its parts, in one run:
// raw AES-256-GCM drawing its nonce, the same with v4's 9 bytes of
// associated data (7 header bytes and an integer row key), the context
// check alone, and the scope's whole seal (header, associated data,
// check). What the field layer adds on top (the context's assembly, its
// pooled buffer) is field's BenchmarkSeal minus the last.
func BenchmarkV4Parts(b *testing.B) {
	key := make([]byte, 32)
	rand.Read(key)
	blk, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCMWithRandomNonce(blk)
	pt := make([]byte, 64)
	out := make([]byte, 0, 256)
	ad := make([]byte, 0, 64)
	ad = append(ad, make([]byte, headerSize)...)
	ad = append(ad, 0, 2, '4', '2')
	b.Run("raw-random-nonce", func(b *testing.B) {
		for b.Loop() {
			out = g.Seal(out[:0], nil, pt, nil)
		}
	})
	b.Run("raw-random-nonce+ad", func(b *testing.B) {
		for b.Loop() {
			out = g.Seal(out[:0], nil, pt, ad[headerSize-adHead:])
		}
	})
	kr, _ := New(AES256GCM)
	s := kr.Scope(FieldScope("messages", "body"))
	c, _ := s.current()
	nonce := make([]byte, 12)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			c.primary.check(nonce, ad, headerSize)
		}
	})
	b.Run("scope", func(b *testing.B) {
		for b.Loop() {
			out, _ = s.AppendSealAD(out[:0], pt, ad)
		}
	})
}
