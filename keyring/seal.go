package keyring

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"sync"
)

// adPool holds scratch buffers for associated data, so that sealing and
// opening allocate only their output.
var adPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Seal encrypts plaintext under the primary key, bound to context, and
// returns a binary ciphertext (format v2). The same context must be passed
// to Open.
func (kr *Keyring) Seal(plaintext, context []byte) ([]byte, error) {
	return kr.AppendSeal(nil, plaintext, context)
}

// AppendSeal is like Seal but appends the ciphertext to dst.
func (kr *Keyring) AppendSeal(dst, plaintext, context []byte) ([]byte, error) {
	k := kr.load().primary
	if k == nil {
		return nil, ErrNoPrimary
	}
	ns := k.Algorithm.NonceSize()
	total := HeaderSize + ns + len(plaintext) + TagSize
	ret, out := sliceForAppend(dst, total)
	nonce := out[HeaderSize : HeaderSize+ns]
	rand.Read(nonce)
	out[0] = Version2
	out[1] = byte(k.Algorithm)
	binary.BigEndian.PutUint32(out[2:6], uint32(k.ID))
	binary.BigEndian.PutUint32(out[6:10], k.contextCheckV2(nonce, context))
	// The associated data is header || context, assembled in a pooled
	// buffer so that context does not escape and callers can pass stack
	// buffers.
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], out[:HeaderSize]...), context...)
	k.aead.Seal(out[:HeaderSize+ns], nonce, plaintext, ad)
	*adp = ad
	adPool.Put(adp)
	return ret, nil
}

// Open authenticates and decrypts a binary ciphertext (v1 or v2) sealed for
// context. On any error it returns nil plaintext.
func (kr *Keyring) Open(ciphertext, context []byte) ([]byte, error) {
	return kr.AppendOpen(nil, ciphertext, context)
}

// AppendOpen is like Open but appends the plaintext to dst. On error dst is
// returned unchanged.
func (kr *Keyring) AppendOpen(dst, ciphertext, context []byte) ([]byte, error) {
	h, k, err := kr.keyFor(ciphertext)
	if err != nil {
		return dst, err
	}
	ns := k.Algorithm.NonceSize()
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], ciphertext[:HeaderSize]...), context...)
	out, err := k.aead.Open(dst, ciphertext[HeaderSize:HeaderSize+ns], ciphertext[HeaderSize+ns:], ad)
	*adp = ad
	adPool.Put(adp)
	if err != nil {
		// The AEAD authenticated the context with the header, so the
		// check is needed only to say why opening failed.
		if !k.checkMatches(h, ciphertext, context) {
			return dst, ErrWrongContext
		}
		return dst, ErrAuthentication
	}
	return out, nil
}

// ContextMatches reports whether the context check of a ciphertext matches
// context, without decrypting: a cheap test, for jobs that look for values
// bound under an older context layout, of which context a value was
// sealed for. A true answer is a hint (the check is 32 bits), not an
// authentication: only Open authenticates.
func (kr *Keyring) ContextMatches(ciphertext, context []byte) (bool, error) {
	h, k, err := kr.keyFor(ciphertext)
	if err != nil {
		return false, err
	}
	return k.checkMatches(h, ciphertext, context), nil
}

// keyFor parses the header and finds an enabled key of the right
// algorithm.
func (kr *Keyring) keyFor(ciphertext []byte) (Header, *key, error) {
	h, err := ParseHeader(ciphertext)
	if err != nil {
		return h, nil, err
	}
	k, ok := kr.load().byID[h.KeyID]
	if !ok {
		return h, nil, &KeyError{ID: h.KeyID, Err: ErrUnknownKey}
	}
	if k.State == Disabled {
		return h, nil, &KeyError{ID: h.KeyID, Err: ErrKeyDisabled}
	}
	if k.Algorithm != h.Algorithm {
		return h, nil, fmt.Errorf("%w: algorithm %v does not match key %v (%v)", ErrMalformed, h.Algorithm, k.ID, k.Algorithm)
	}
	return h, k, nil
}

// checkMatches compares the header's context check with context's.
func (k *key) checkMatches(h Header, ciphertext, context []byte) bool {
	if h.Version == Version1 {
		c := k.check.Get().(*checker)
		c.in = append(c.in[:0], context...) // crc32 would make context escape
		sum := crc32.Checksum(c.in, castagnoli)
		k.check.Put(c)
		return sum == h.ContextCheck
	}
	nonce := ciphertext[HeaderSize : HeaderSize+k.Algorithm.NonceSize()]
	want := k.contextCheckV2(nonce, context)
	var a, b [CheckSize]byte
	binary.BigEndian.PutUint32(a[:], want)
	binary.BigEndian.PutUint32(b[:], h.ContextCheck)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// contextCheckV2 is the first 4 bytes of HMAC-SHA-256(K, nonce ‖ context),
// K = HKDF-SHA-256(key material, info "ward ciphertext v2 context check").
// The nonce makes checks of equal contexts differ between values.
func (k *key) contextCheckV2(nonce, context []byte) uint32 {
	c := k.check.Get().(*checker)
	c.mac.Reset()
	// Copied first: passing context to an interface method would make
	// every caller's context escape to the heap.
	c.in = append(append(c.in[:0], nonce...), context...)
	c.mac.Write(c.in)
	sum := c.mac.Sum(c.sum[:0])
	v := binary.BigEndian.Uint32(sum[:CheckSize])
	k.check.Put(c)
	return v
}

// checker is a keyed HMAC with room for its output, pooled per key so
// that a context check allocates nothing.
type checker struct {
	mac hash.Hash
	sum [32]byte
	in  []byte
}

// sliceForAppend extends in by n bytes, returning the whole slice and the
// new tail (the same helper as in crypto/cipher).
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	tail = head[len(in):]
	return
}
