// Package argon2 is ward's Argon2 core: Argon2d, Argon2i and Argon2id,
// version 0x13, as specified by RFC 9106, written from the RFC.
//
// It differs from golang.org/x/crypto/argon2 in three ways that matter to
// a server: the caller supplies the block memory (so that it can be reused
// between hashes and bounded by a limiter), lanes are filled in parallel,
// and the compression function G has AVX2 and AVX-512 implementations on
// amd64, chosen at run time (see [Impl]), besides the portable Go one. It
// also takes the secret K and associated data X of RFC 9106 §3.1.
//
// Three implementations of G exist: "generic" (portable Go, the
// reference), "avx2" (amd64 with AVX2: YMM registers, the block staged in
// a stack buffer between the row and column passes) and "avx512" (amd64
// with AVX-512F: the whole block in sixteen ZMM registers, rotations by
// VPRORQ). The fastest the CPU supports is chosen at start-up;
// WARD_ARGON2_IMPL forces another. The assembly (g_amd64.s) is generated
// by _asm with avo, and TestAssemblyCurrent checks it is current. Every
// implementation runs RFC 9106's test vectors, differential tests against
// x/crypto/argon2 (Argon2i, Argon2id) and go-crypt (Argon2d) over random
// parameters, a comparison with the reference C library through
// libargon2 where it is installed (secret and associated data included),
// and a block-by-block comparison of G with the portable one.
package argon2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/crypto/blake2b"
)

// Variant is an Argon2 type (RFC 9106 §3.1, y).
type Variant uint32

// Variants, with the values RFC 9106 hashes into H0.
const (
	Argon2d  Variant = 0
	Argon2i  Variant = 1
	Argon2id Variant = 2
)

// Version is the only Argon2 version supported, 0x13 (19).
const Version = 0x13

// BlockSize is the size of one memory block in bytes.
const BlockSize = 1024

// syncPoints is the number of slices per pass (SL in RFC 9106).
const syncPoints = 4

// Block is one 1 KiB memory block: 128 little-endian 64-bit words. It is
// an alias so that the assembly's signatures need no package types.
type Block = [BlockSize / 8]uint64

// Params are the inputs of one hash besides the password and salt.
type Params struct {
	Variant Variant
	// Time is the number of passes (t >= 1).
	Time uint32
	// Memory is the memory size in KiB (m >= 8 * Lanes).
	Memory uint32
	// Lanes is the degree of parallelism (p, 1..2^24-1; ward caps it).
	Lanes uint32
	// KeyLen is the tag length in bytes (T >= 4).
	KeyLen uint32
	// Secret is the optional secret value K; AssociatedData is X.
	Secret, AssociatedData []byte
}

// Blocks returns the number of memory blocks a hash with p uses: m
// rounded down to a multiple of 4·p (m' in RFC 9106).
func (p Params) Blocks() int {
	if p.Lanes == 0 {
		return 0
	}
	q := 4 * p.Lanes
	return int(p.Memory / q * q)
}

func (p Params) validate(saltLen int) error {
	switch {
	case p.Variant > Argon2id:
		return fmt.Errorf("argon2: unknown variant %d", p.Variant)
	case p.Time < 1:
		return errors.New("argon2: t must be at least 1")
	case p.Lanes < 1 || p.Lanes > 1<<24-1:
		return errors.New("argon2: p must be in 1..2^24-1")
	case p.Memory < 8*p.Lanes:
		return errors.New("argon2: m must be at least 8·p KiB")
	case p.KeyLen < 4:
		return errors.New("argon2: the tag must be at least 4 bytes")
	case saltLen < 8:
		return errors.New("argon2: the salt must be at least 8 bytes")
	}
	return nil
}

// MemoryBlocks is how many blocks Key needs: the m' blocks of the hash and
// three scratch blocks per lane for data-independent addressing.
func (p Params) MemoryBlocks() int { return p.Blocks() + 3*int(p.Lanes) }

// Key computes the Argon2 tag of password and salt, using mem as block
// memory: mem must hold at least p.MemoryBlocks() blocks, and need not be
// zeroed (every block is written before it is read). The caller should
// zero mem before reusing it for another purpose: it holds values derived
// from the password.
func Key(password, salt []byte, p Params, mem []Block) ([]byte, error) {
	if err := p.validate(len(salt)); err != nil {
		return nil, err
	}
	n := p.Blocks()
	if len(mem) < p.MemoryBlocks() {
		return nil, fmt.Errorf("argon2: %d blocks of memory given, %d needed", len(mem), p.MemoryBlocks())
	}
	scratch := mem[n:p.MemoryBlocks()]
	mem = mem[:n]
	h0 := initialHash(password, salt, p)
	defer clear(h0[:])
	laneLen := n / int(p.Lanes)
	for l := 0; l < int(p.Lanes); l++ {
		firstBlocks(&h0, uint32(l), mem[l*laneLen:])
	}
	f := filler{mem: mem, scratch: scratch, p: p, lanes: int(p.Lanes), laneLen: laneLen, segLen: laneLen / syncPoints, g: impl.g}
	f.fill()
	return finalize(mem, p, laneLen), nil
}

// initialHash is H0 (RFC 9106 §3.2, step 1).
func initialHash(password, salt []byte, p Params) [blake2b.Size + 8]byte {
	h, _ := blake2b.New512(nil)
	var b [4]byte
	le := func(v uint32) { binary.LittleEndian.PutUint32(b[:], v); h.Write(b[:]) }
	le(p.Lanes)
	le(p.KeyLen)
	le(p.Memory)
	le(p.Time)
	le(Version)
	le(uint32(p.Variant))
	for _, in := range [][]byte{password, salt, p.Secret, p.AssociatedData} {
		le(uint32(len(in)))
		h.Write(in)
	}
	var out [blake2b.Size + 8]byte // room for the two counters appended below
	h.Sum(out[:0])
	return out
}

// firstBlocks computes B[l][0] and B[l][1] (step 3).
func firstBlocks(h0 *[blake2b.Size + 8]byte, lane uint32, laneMem []Block) {
	var buf [BlockSize]byte
	binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], lane)
	for i := uint32(0); i < 2; i++ {
		binary.LittleEndian.PutUint32(h0[blake2b.Size:], i)
		hashPrime(buf[:], h0[:])
		fromBytes(&laneMem[i], buf[:])
	}
	clear(buf[:])
}

// finalize XORs the last block of every lane and hashes it (step 7).
func finalize(mem []Block, p Params, laneLen int) []byte {
	var c Block
	for l := 0; l < int(p.Lanes); l++ {
		last := &mem[(l+1)*laneLen-1]
		for i := range c {
			c[i] ^= last[i]
		}
	}
	var buf [BlockSize]byte
	toBytes(&c, buf[:])
	out := make([]byte, p.KeyLen)
	hashPrime(out, buf[:])
	clear(buf[:])
	clear(c[:])
	return out
}

// hashPrime is H' (RFC 9106 §3.3): the variable-length hash, filling out.
func hashPrime(out, in []byte) {
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], uint32(len(out)))
	if len(out) <= blake2b.Size {
		h, _ := blake2b.New(len(out), nil)
		h.Write(t[:])
		h.Write(in)
		h.Sum(out[:0])
		return
	}
	h, _ := blake2b.New512(nil)
	h.Write(t[:])
	h.Write(in)
	var v [blake2b.Size]byte
	h.Sum(v[:0])
	r := (len(out)+31)/32 - 2
	n := copy(out, v[:32])
	for i := 1; i < r; i++ {
		v = blake2b.Sum512(v[:])
		n += copy(out[n:], v[:32])
	}
	last, _ := blake2b.New(len(out)-32*r, nil)
	last.Write(v[:])
	last.Sum(out[n:n])
	clear(v[:])
}

func fromBytes(b *Block, in []byte) {
	for i := range b {
		b[i] = binary.LittleEndian.Uint64(in[8*i:])
	}
}

func toBytes(b *Block, out []byte) {
	for i, v := range b {
		binary.LittleEndian.PutUint64(out[8*i:], v)
	}
}

// filler fills the memory (RFC 9106 §3.2 steps 4-6, §3.4).
type filler struct {
	mem     []Block
	scratch []Block // three per lane: the addresser's input, block and zero
	p       Params
	lanes   int
	laneLen int
	segLen  int
	g       compressor
}

func (f *filler) fill() {
	for pass := uint32(0); pass < f.p.Time; pass++ {
		for slice := 0; slice < syncPoints; slice++ {
			if f.lanes == 1 {
				f.segment(pass, 0, slice)
				continue
			}
			var wg sync.WaitGroup
			for l := 0; l < f.lanes; l++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f.segment(pass, l, slice)
				}()
			}
			wg.Wait()
		}
	}
}

// segment computes the blocks of one lane in one slice.
func (f *filler) segment(pass uint32, lane, slice int) {
	independent := f.p.Variant == Argon2i || (f.p.Variant == Argon2id && pass == 0 && slice < syncPoints/2)
	var addr addresser
	if independent {
		addr.init(f.scratch[3*lane:3*lane+3], pass, lane, slice, f)
	}
	start := 0
	if pass == 0 && slice == 0 {
		start = 2 // B[l][0] and B[l][1] are set
		if independent {
			addr.next(f.g) // the address block's first two pairs are skipped with them
		}
	}
	laneBase := lane * f.laneLen
	for index := start; index < f.segLen; index++ {
		cur := slice*f.segLen + index
		prev := cur - 1
		if cur == 0 {
			prev = f.laneLen - 1
		}
		var pseudo uint64
		if independent {
			if index%len(addr.block) == 0 {
				addr.next(f.g)
			}
			pseudo = addr.block[index%len(addr.block)]
		} else {
			pseudo = f.mem[laneBase+prev][0]
		}
		ref := f.reference(pass, lane, slice, index, pseudo)
		f.g(&f.mem[laneBase+cur], &f.mem[laneBase+prev], &f.mem[ref], pass > 0)
	}
}

// reference maps a pseudo-random value to the index of the reference
// block (RFC 9106 §3.4.1.2).
func (f *filler) reference(pass uint32, lane, slice, index int, pseudo uint64) int {
	j1, j2 := pseudo&0xffffffff, pseudo>>32
	refLane := int(j2 % uint64(f.lanes))
	if pass == 0 && slice == 0 {
		refLane = lane
	}
	var area int
	switch {
	case pass == 0 && refLane == lane:
		area = slice*f.segLen + index - 1
	case pass == 0:
		area = slice * f.segLen
		if index == 0 {
			area--
		}
	case refLane == lane:
		area = (syncPoints-1)*f.segLen + index - 1
	default:
		area = (syncPoints - 1) * f.segLen
		if index == 0 {
			area--
		}
	}
	x := j1 * j1 >> 32
	y := uint64(area) * x >> 32
	zz := uint64(area) - 1 - y
	startPos := 0
	if pass > 0 && slice != syncPoints-1 {
		startPos = (slice + 1) * f.segLen
	}
	return refLane*f.laneLen + int((uint64(startPos)+zz)%uint64(f.laneLen))
}

// addresser generates the pseudo-random values of data-independent
// addressing (RFC 9106 §3.4.1.2): address blocks G(0, G(0, Z)) with an
// incrementing counter in Z. Its blocks live in the scratch memory, so
// that a hash allocates no block memory.
type addresser struct {
	input, block, zero *Block
}

func (a *addresser) init(scratch []Block, pass uint32, lane, slice int, f *filler) {
	a.input, a.block, a.zero = &scratch[0], &scratch[1], &scratch[2]
	clear(a.input[:])
	clear(a.zero[:])
	a.input[0] = uint64(pass)
	a.input[1] = uint64(lane)
	a.input[2] = uint64(slice)
	a.input[3] = uint64(len(f.mem))
	a.input[4] = uint64(f.p.Time)
	a.input[5] = uint64(f.p.Variant)
}

func (a *addresser) next(g compressor) {
	a.input[6]++
	g(a.block, a.zero, a.input, false)
	g(a.block, a.zero, a.block, false)
}
