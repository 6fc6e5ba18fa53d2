package argon2

import "math/bits"

// compressor is an implementation of the compression function G (RFC 9106
// §3.5): out = P-columns(P-rows(x ⊕ y)) ⊕ x ⊕ y, XORed into out instead of
// stored when xor is set (passes after the first, version 0x13). out may
// alias x or y.
type compressor func(out, x, y *Block, xor bool)

// Impl names the implementation of G in use: "generic", "avx2" or
// "avx512".
func Impl() string { return impl.name }

type implementation struct {
	name string
	g    compressor
}

// impl is chosen at start-up (see impls_amd64.go) and can be forced by
// tests.
var impl = implementation{"generic", gGeneric}

// gGeneric is the portable implementation of G, the reference every other
// one is tested against.
func gGeneric(out, x, y *Block, xor bool) {
	var r, q Block
	for i := range r {
		r[i] = x[i] ^ y[i]
	}
	q = r
	for i := 0; i < 128; i += 16 { // rows: 8 registers of 2 words, in order
		permute(&q, i, i+1, i+2, i+3, i+4, i+5, i+6, i+7, i+8, i+9, i+10, i+11, i+12, i+13, i+14, i+15)
	}
	for i := 0; i < 16; i += 2 { // columns: register i/2 of every row
		permute(&q, i, i+1, i+16, i+17, i+32, i+33, i+48, i+49, i+64, i+65, i+80, i+81, i+96, i+97, i+112, i+113)
	}
	if xor {
		for i := range out {
			out[i] ^= q[i] ^ r[i]
		}
		return
	}
	for i := range out {
		out[i] = q[i] ^ r[i]
	}
}

// permute is P (RFC 9106 §3.6) on the sixteen words v0..v15 at the given
// indices of b: GB on the columns, then on the diagonals, of the 4×4
// matrix of words.
func permute(b *Block, i0, i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13, i14, i15 int) {
	v0, v1, v2, v3 := b[i0], b[i1], b[i2], b[i3]
	v4, v5, v6, v7 := b[i4], b[i5], b[i6], b[i7]
	v8, v9, v10, v11 := b[i8], b[i9], b[i10], b[i11]
	v12, v13, v14, v15 := b[i12], b[i13], b[i14], b[i15]
	v0, v4, v8, v12 = gb(v0, v4, v8, v12)
	v1, v5, v9, v13 = gb(v1, v5, v9, v13)
	v2, v6, v10, v14 = gb(v2, v6, v10, v14)
	v3, v7, v11, v15 = gb(v3, v7, v11, v15)
	v0, v5, v10, v15 = gb(v0, v5, v10, v15)
	v1, v6, v11, v12 = gb(v1, v6, v11, v12)
	v2, v7, v8, v13 = gb(v2, v7, v8, v13)
	v3, v4, v9, v14 = gb(v3, v4, v9, v14)
	b[i0], b[i1], b[i2], b[i3] = v0, v1, v2, v3
	b[i4], b[i5], b[i6], b[i7] = v4, v5, v6, v7
	b[i8], b[i9], b[i10], b[i11] = v8, v9, v10, v11
	b[i12], b[i13], b[i14], b[i15] = v12, v13, v14, v15
}

// gb is GB (RFC 9106 §3.6): BLAKE2b's G with its additions replaced by the
// BlaMka function a + b + 2·trunc(a)·trunc(b).
func gb(a, b, c, d uint64) (uint64, uint64, uint64, uint64) {
	a = fBlaMka(a, b)
	d = bits.RotateLeft64(d^a, -32)
	c = fBlaMka(c, d)
	b = bits.RotateLeft64(b^c, -24)
	a = fBlaMka(a, b)
	d = bits.RotateLeft64(d^a, -16)
	c = fBlaMka(c, d)
	b = bits.RotateLeft64(b^c, -63)
	return a, b, c, d
}

func fBlaMka(x, y uint64) uint64 {
	return x + y + 2*uint64(uint32(x))*uint64(uint32(y))
}
