package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
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

// BenchmarkCheckInSealedBytes measures the v5 design FORMAT.md weighs in
// "Why the check keeps its AES block" beside v4's seal, at the sizes of
// the floor issue: the context's CRC-32C sealed as the plaintext's first
// four bytes (GCM's own keystream hides it; no AES block of its own), which
// costs a copy of the plaintext behind those bytes, since the AEAD seals
// one contiguous plaintext. Both write the same 7-byte header through the
// same AEAD; only the check differs.
func BenchmarkCheckInSealedBytes(b *testing.B) {
	kr, _ := New(AES256GCM)
	s := kr.Scope(FieldScope("messages", "body"))
	c, _ := s.current()
	k := c.primary
	ad := make([]byte, 0, 64)
	ad = append(ad, make([]byte, headerSize)...)
	ad = append(ad, 0, 2, '4', '2')
	for _, size := range []int{64, 500, 1 << 20} {
		pt := make([]byte, size)
		out := make([]byte, 0, size+64)
		scratch := make([]byte, 0, size+checkSize)
		b.Run(fmt.Sprintf("v4/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				out, _ = s.AppendSealAD(out[:0], pt, ad)
			}
		})
		b.Run(fmt.Sprintf("crc-in-plaintext/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				ret, o := sliceForAppend(out[:0], adHead+k.ns+checkSize+size+TagSize) // a 7-byte header: the check is sealed
				binary.BigEndian.PutUint64(o, k.head)
				copy(ad[headerSize-adHead:], o[:adHead])
				scratch = binary.BigEndian.AppendUint32(scratch[:0], crc32.Checksum(ad[headerSize:], castagnoli))
				scratch = append(scratch, pt...)
				k.aead.Seal(o[:adHead], nil, scratch, ad[headerSize-adHead:])
				out = ret
			}
		})
	}
}
