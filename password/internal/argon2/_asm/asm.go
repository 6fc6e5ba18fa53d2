// Command asm generates g_amd64.s: the AVX2 and AVX-512 implementations
// of Argon2's compression function G (RFC 9106 §3.5). Run it from this
// folder with
//
//	go run . -out ../g_amd64.s -stubs ../g_amd64_stubs.go -pkg argon2
//
// TestAssemblyCurrent checks that the committed files match its output.
//
// A block is 128 words, seen by the RFC as an 8×8 matrix of 16-byte
// registers: row r holds words 16r..16r+15, and register (r, j) words
// 16r+2j and 16r+2j+1. G applies the permutation P to each row, then to
// each column, of R = X ⊕ Y, and XORs R back in. P works on 16 words
// v0..v15 as four vectors of four words, a = v0..v3, b = v4..v7,
// c = v8..v11 and d = v12..v15: GB on the columns (a[i], b[i], c[i],
// d[i]), then on the diagonals, which a rotation of b, c and d by one, two
// and three words lines up as columns.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	genAVX512()
	genAVX2()
	Generate()
}

// vec is one of P's four vectors, or a temporary.
type vec = VecPhysical

// op is one instruction of a schedule; two schedules are interleaved to
// give the processor independent work.
type op func()

// interleave emits the ops of several schedules alternately.
func interleave(schedules ...[]op) {
	for i := 0; ; i++ {
		done := true
		for _, s := range schedules {
			if i < len(s) {
				s[i]()
				done = false
			}
		}
		if done {
			return
		}
	}
}

// isa abstracts the few instructions that differ between AVX2 and AVX-512:
// rotations, and the names of XOR.
type isa struct {
	rotr func(n int, v vec) []op // v = v >>> n
	xor  func(src, dst vec) op   // dst ^= src
	t    vec                     // temporary for the multiplication
	t2   vec                     // second temporary (AVX2 rotation by 63)
}

// blamka is a = a + b + 2·lo32(a)·lo32(b), per 64-bit lane.
func (s isa) blamka(a, b vec) []op {
	return []op{
		func() { VPMULUDQ(b, a, s.t) },
		func() { VPADDQ(s.t, s.t, s.t) },
		func() { VPADDQ(b, a, a) },
		func() { VPADDQ(s.t, a, a) },
	}
}

// gb is the column (or, after diagonalisation, diagonal) step of P on four
// vectors.
func (s isa) gb(a, b, c, d vec) []op {
	var ops []op
	for _, st := range []struct {
		x, y, z vec
		n       int
	}{{a, b, d, 32}, {c, d, b, 24}, {a, b, d, 16}, {c, d, b, 63}} {
		ops = append(ops, s.blamka(st.x, st.y)...)
		ops = append(ops, s.xor(st.x, st.z))
		ops = append(ops, s.rotr(st.n, st.z)...)
	}
	return ops
}

// permute is P on the vectors a, b, c, d.
func (s isa) permute(a, b, c, d vec) []op {
	ops := s.gb(a, b, c, d)
	ops = append(ops, func() { VPERMQ(U8(0x39), b, b) }, func() { VPERMQ(U8(0x4e), c, c) }, func() { VPERMQ(U8(0x93), d, d) })
	ops = append(ops, s.gb(a, b, c, d)...)
	return append(ops, func() { VPERMQ(U8(0x93), b, b) }, func() { VPERMQ(U8(0x4e), c, c) }, func() { VPERMQ(U8(0x39), d, d) })
}

// params loads the arguments: out, x and y pointers and the xor flag.
func params() (out, x, y, xor Register) {
	out = Load(Param("out"), GP64())
	x = Load(Param("x"), GP64())
	y = Load(Param("y"), GP64())
	xor = Load(Param("xor"), GP8())
	return
}

// genAVX512 keeps the whole block in sixteen ZMM registers; each register
// holds two of P's vectors (one per 256-bit half), so one permute runs two
// P's, and VPERMQ's immediate form permutes each half on its own. Between
// the phases only whole 128-bit registers move (VSHUFI64X2).
func genAVX512() {
	TEXT("gAVX512", NOSPLIT, "func(out, x, y *[128]uint64, xor bool)")
	Doc("gAVX512 is G with AVX-512F instructions.")
	Pragma("noescape")
	out, x, y, xor := params()
	Z := func(i int) vec { return zmm(i) }
	s := isa{
		rotr: func(n int, v vec) []op { return []op{func() { VPRORQ(U8(n), v, v) }} },
		xor:  func(src, dst vec) op { return func() { VPXORQ(src, dst, dst) } },
	}

	Comment("R = x ⊕ y in natural order: Z16+m holds words 8m..8m+7.")
	for m := 0; m < 16; m++ {
		VMOVDQU64(Mem{Base: x, Disp: 64 * m}, Z(16+m))
		VPXORQ(Mem{Base: y, Disp: 64 * m}, Z(16+m), Z(16+m))
	}
	Comment("Row layout: Z4k..Z4k+3 hold vectors a, b, c, d of rows 2k (low half) and 2k+1 (high half).")
	for k := 0; k < 4; k++ {
		lo, hi := Z(16+4*k), Z(16+4*k+2)     // rows 2k and 2k+1, words 0..7
		lo2, hi2 := Z(16+4*k+1), Z(16+4*k+3) // words 8..15
		VSHUFI64X2(U8(0x44), hi, lo, Z(4*k))
		VSHUFI64X2(U8(0xee), hi, lo, Z(4*k+1))
		VSHUFI64X2(U8(0x44), hi2, lo2, Z(4*k+2))
		VSHUFI64X2(U8(0xee), hi2, lo2, Z(4*k+3))
	}
	Comment("P on the rows, two row pairs at a time.")
	for k := 0; k < 4; k += 2 {
		s0, s1 := s, s
		s0.t, s1.t = Z(16+k), Z(17+k)
		interleave(s0.permute(Z(4*k), Z(4*k+1), Z(4*k+2), Z(4*k+3)), s1.permute(Z(4*k+4), Z(4*k+5), Z(4*k+6), Z(4*k+7)))
	}
	Comment("Column layout: swapping the middle 128-bit lanes of every register makes")
	Comment("Zc, Z4+c, Z8+c, Z12+c vectors a, b, c, d of columns 2c (low) and 2c+1 (high).")
	for i := 0; i < 16; i++ {
		VSHUFI64X2(U8(0xd8), Z(i), Z(i), Z(i))
	}
	Comment("P on the columns, two column pairs at a time.")
	for c := 0; c < 4; c += 2 {
		s0, s1 := s, s
		s0.t, s1.t = Z(16+c), Z(17+c)
		interleave(s0.permute(Z(c), Z(4+c), Z(8+c), Z(12+c)), s1.permute(Z(c+1), Z(5+c), Z(9+c), Z(13+c)))
	}
	Comment("Back to natural order in Z16..Z31.")
	for r := 0; r < 8; r++ {
		g := r / 2
		imm := U8(0x88) // lanes 0 and 2 of each source: the even row
		if r%2 == 1 {
			imm = U8(0xdd)
		}
		VSHUFI64X2(imm, Z(4*g+1), Z(4*g), Z(16+2*r))
		VSHUFI64X2(imm, Z(4*g+3), Z(4*g+2), Z(16+2*r+1))
	}
	Comment("out = P(R) ⊕ R, or out ^= P(R) ⊕ R. Every load happens before the first store: out may alias x or y.")
	for m := 0; m < 16; m++ {
		VMOVDQU64(Mem{Base: x, Disp: 64 * m}, Z(m))
		VPXORQ(Mem{Base: y, Disp: 64 * m}, Z(m), Z(m))
	}
	TESTB(xor, xor)
	JZ(LabelRef("avx512_store"))
	for m := 0; m < 16; m++ {
		VPXORQ(Mem{Base: out, Disp: 64 * m}, Z(m), Z(m))
	}
	Label("avx512_store")
	for m := 0; m < 16; m++ {
		VPXORQ(Z(m), Z(16+m), Z(16+m))
		VMOVDQU64(Z(16+m), Mem{Base: out, Disp: 64 * m})
	}
	VZEROUPPER()
	RET()
}

func zmm(i int) vec {
	return []vec{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}[i]
}
func ymm(i int) vec {
	return []vec{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[i]
}

// genAVX2 works on two rows (or two columns) at a time in eight YMM
// registers, and keeps the block between the phases in a 1 KiB stack
// buffer. In the row phase a register is one of P's vectors, and a row's
// vectors are contiguous. In the column phase every load and store is a
// whole 32 bytes, as in the reference C: register r holds row r's
// registers (r, 2i) and (r, 2i+1), so the low 128-bit halves of the eight
// registers are column 2i and the high halves column 2i+1 (see colPermute).
func genAVX2() {
	rot24 := shuffleMask("rot24", 3) // VPSHUFB masks rotating each word right by 3 and 2 bytes
	rot16 := shuffleMask("rot16", 2)

	TEXT("gAVX2", 0, "func(out, x, y *[128]uint64, xor bool)")
	Doc("gAVX2 is G with AVX2 instructions.")
	Pragma("noescape")
	out, x, y, xor := params()
	Comment("y is the reference block, from anywhere in memory: ask for all of it at once.")
	for i := 0; i < 16; i++ {
		PREFETCHT0(Mem{Base: y, Disp: 64 * i})
	}
	// The stack buffer, aligned to 32 bytes so that no access to it
	// splits a cache line. Go aligns the stack to 8 bytes only: 24 more
	// bytes leave room to round the address up.
	qb := GP64()
	LEAQ(AllocLocal(1024+24), qb)
	ADDQ(U8(31), qb)
	ANDQ(I8(-32), qb)
	q := Mem{Base: qb}
	Y := func(i int) vec { return ymm(i) }
	m24, m16 := Y(14), Y(15)
	VMOVDQU(rot24, m24)
	VMOVDQU(rot16, m16)
	s := isa{
		xor: func(src, dst vec) op { return func() { VPXOR(src, dst, dst) } },
	}
	rotr := func(t2 vec) func(n int, v vec) []op {
		return func(n int, v vec) []op {
			switch n {
			case 32:
				return []op{func() { VPSHUFD(U8(0xb1), v, v) }}
			case 24:
				return []op{func() { VPSHUFB(m24, v, v) }}
			case 16:
				return []op{func() { VPSHUFB(m16, v, v) }}
			}
			return []op{ // 63: (v << 1) | (v >> 63)
				func() { VPSRLQ(U8(63), v, t2) },
				func() { VPADDQ(v, v, v) },
				func() { VPOR(t2, v, v) },
			}
		}
	}
	s0, s1 := s, s
	s0.t, s0.t2, s1.t, s1.t2 = Y(8), Y(9), Y(10), Y(11)
	s0.rotr, s1.rotr = rotr(s0.t2), rotr(s1.t2)

	Comment("Rows: Q = P-rows(x ⊕ y), two rows at a time.")
	for r := 0; r < 8; r += 2 {
		for i := 0; i < 8; i++ {
			VMOVDQU(Mem{Base: x, Disp: 128*r + 32*i}, Y(i))
			VPXOR(Mem{Base: y, Disp: 128*r + 32*i}, Y(i), Y(i))
		}
		interleave(s0.permute(Y(0), Y(1), Y(2), Y(3)), s1.permute(Y(4), Y(5), Y(6), Y(7)))
		for i := 0; i < 8; i++ {
			VMOVDQU(Y(i), q.Offset(128*r+32*i))
		}
	}
	Comment("Columns: Q = P-columns(Q), columns 2i and 2i+1 at a time.")
	v := [8]vec{Y(0), Y(1), Y(2), Y(3), Y(4), Y(5), Y(6), Y(7)}
	for i := 0; i < 4; i++ {
		for r := 0; r < 8; r++ {
			VMOVDQU(q.Offset(128*r+32*i), v[r])
		}
		colPermute(s0, s1, v, Y(12), Y(13))
		for r := 0; r < 8; r++ {
			VMOVDQU(v[r], q.Offset(128*r+32*i))
		}
	}
	avx2Output(q, out, x, y, xor)
}

// colPermute emits P on two columns at once. Register v[r] holds the
// 16-byte registers (r, j) and (r, j+1) of rows r = 0..7: in P's words
// v0..v15 of column j, v[0] = [v0 v1 | v0' v1'], v[1] = [v2 v3 | v2' v3'],
// and so on, a primed word belonging to column j+1. GB is lane-wise, so the
// column step is GB on (v[0], v[2], v[4], v[6]) and on (v[1], v[3], v[5],
// v[7]). For the diagonal step, which pairs v0 with v5, v10 and v15, the
// halves of b and d are realigned with VPALIGNR (which stays within each
// 128-bit lane), and c's two registers simply trade places:
//
//	b: [v5 v6], [v7 v4]   from v[2] = [v4 v5], v[3] = [v6 v7]
//	c: [v10 v11], [v8 v9] = v[5], v[4]
//	d: [v15 v12], [v13 v14] from v[6] = [v12 v13], v[7] = [v14 v15]
//
// Afterwards the inverse realignment puts every word back in v[r]. t and u
// are spare registers; s0 and s1 carry each half's temporaries.
func colPermute(s0, s1 isa, v [8]vec, t, u vec) {
	// VPALIGNR $8, lo, hi, dst sets each 128-bit lane of dst to
	// [lo's high word, hi's low word].
	align := func(lo, hi, dst vec) { VPALIGNR(U8(8), lo, hi, dst) }
	interleave(s0.gb(v[0], v[2], v[4], v[6]), s1.gb(v[1], v[3], v[5], v[7]))
	align(v[2], v[3], t)    // [v5 v6]
	align(v[3], v[2], v[3]) // [v7 v4]
	align(v[7], v[6], u)    // [v15 v12]
	align(v[6], v[7], v[7]) // [v13 v14]
	interleave(s0.gb(v[0], t, v[5], u), s1.gb(v[1], v[3], v[4], v[7]))
	align(v[3], t, v[2]) // [v4 v5]
	align(t, v[3], v[3]) // [v6 v7]
	align(u, v[7], v[6]) // [v12 v13]
	align(v[7], u, v[7]) // [v14 v15]
}

// avx2Output writes out = Q ⊕ x ⊕ y, or out ^= Q ⊕ x ⊕ y, from the stack
// buffer q, and returns.
func avx2Output(q Mem, out, x, y, xor Register) {
	Comment("out = Q ⊕ x ⊕ y, or out ^= Q ⊕ x ⊕ y; each 32 bytes are read before they are written.")
	TESTB(xor, xor)
	JNZ(LabelRef("avx2_xor"))
	for i := 0; i < 32; i++ {
		VMOVDQU(q.Offset(32*i), ymm(0))
		VPXOR(Mem{Base: x, Disp: 32 * i}, ymm(0), ymm(0))
		VPXOR(Mem{Base: y, Disp: 32 * i}, ymm(0), ymm(0))
		VMOVDQU(ymm(0), Mem{Base: out, Disp: 32 * i})
	}
	VZEROUPPER()
	RET()
	Label("avx2_xor")
	for i := 0; i < 32; i++ {
		VMOVDQU(q.Offset(32*i), ymm(0))
		VPXOR(Mem{Base: x, Disp: 32 * i}, ymm(0), ymm(0))
		VPXOR(Mem{Base: y, Disp: 32 * i}, ymm(0), ymm(0))
		VPXOR(Mem{Base: out, Disp: 32 * i}, ymm(0), ymm(0))
		VMOVDQU(ymm(0), Mem{Base: out, Disp: 32 * i})
	}
	VZEROUPPER()
	RET()
}

// shuffleMask defines a 32-byte VPSHUFB mask that rotates every 64-bit
// word right by n bytes: byte i of a word takes byte (i+n) mod 8. VPSHUFB
// indexes within each 128-bit lane, so the second word of a lane adds 8.
func shuffleMask(name string, n int) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for q := 0; q < 4; q++ {
		for i := 0; i < 8; i++ {
			DATA(8*q+i, U8((i+n)%8+8*(q%2)))
		}
	}
	return m
}
