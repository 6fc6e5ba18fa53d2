package argon2

import (
	"fmt"
	"testing"

	xargon2 "golang.org/x/crypto/argon2"
)

// BenchmarkKey compares the implementations of G on the field report's
// parameters (m=16384 KiB, t=2, p=1), OWASP's (m=19456) and RFC 9106's
// second recommendation (m=64 MiB, t=3, p=4), with memory reused, beside
// x/crypto/argon2 (which allocates per hash).
func BenchmarkKey(b *testing.B) {
	pw, salt := []byte("correct horse battery staple"), []byte("saltsaltsalt1234")
	for _, p := range []Params{
		{Variant: Argon2id, Time: 2, Memory: 16384, Lanes: 1, KeyLen: 32},
		{Variant: Argon2id, Time: 2, Memory: 19456, Lanes: 1, KeyLen: 32},
		{Variant: Argon2id, Time: 3, Memory: 65536, Lanes: 4, KeyLen: 32},
	} {
		name := fmt.Sprintf("m=%d,t=%d,p=%d", p.Memory, p.Time, p.Lanes)
		mem := make([]Block, p.MemoryBlocks())
		saved := impl
		for _, im := range available() {
			impl = im
			b.Run(name+"/"+im.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Key(pw, salt, p, mem)
				}
			})
		}
		impl = saved
		b.Run(name+"/x-crypto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				xargon2.IDKey(pw, salt, p.Time, p.Memory, uint8(p.Lanes), p.KeyLen)
			}
		})
	}
}

// BenchmarkG times one compression per implementation.
func BenchmarkG(b *testing.B) {
	var x, y, out Block
	for i := range x {
		x[i], y[i] = uint64(i)*0x9e3779b97f4a7c15, uint64(i)
	}
	for _, im := range available() {
		b.Run(im.name, func(b *testing.B) {
			b.SetBytes(BlockSize)
			for b.Loop() {
				im.g(&out, &x, &y, true)
			}
		})
	}
}
