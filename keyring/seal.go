package keyring

import (
	"crypto/aes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"slices"
	"sync"
)

// adPool holds scratch buffers for associated data, so that sealing and
// opening allocate only their output.
var adPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Seal encrypts plaintext under the primary key, bound to context, and
// returns a binary ciphertext (format v3). The same context must be passed
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
	return k.appendSeal(dst, classKeyring, plaintext, context), nil
}

// appendSeal seals plaintext as a v3 ciphertext of the given key class
// under k; the header names k's ID (for a subject key, its version).
func (k *key) appendSeal(dst []byte, class keyClass, plaintext, context []byte) []byte {
	ns := k.Algorithm.NonceSize()
	total := headerSize + ns + len(plaintext) + TagSize
	ret, out := sliceForAppend(dst, total)
	nonce := out[headerSize : headerSize+ns]
	rand.Read(nonce)
	out[0] = version3
	out[1] = byte(class)
	out[2] = byte(k.Algorithm)
	binary.BigEndian.PutUint32(out[3:7], uint32(k.ID))
	// The associated data is header || context, assembled in a pooled
	// buffer so that context does not escape and callers can pass stack
	// buffers; the check covers the context part of it.
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], out[:headerSize]...), context...)
	check, ad := k.checkV3(nonce, ad, headerSize)
	copy(out[7:11], check[:])
	copy(ad[7:11], check[:])
	k.aead.Seal(out[:headerSize+ns], nonce, plaintext, ad)
	*adp = ad
	adPool.Put(adp)
	return ret
}

// Open authenticates and decrypts a binary ciphertext (v1, v2 or v3)
// sealed for context. On any error it returns nil plaintext.
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
	return k.appendOpen(h, dst, ciphertext, context)
}

// appendOpen opens a ciphertext whose header h names k.
func (k *key) appendOpen(h header, dst, ciphertext, context []byte) ([]byte, error) {
	ns, hs := k.Algorithm.NonceSize(), h.size()
	adp := adPool.Get().(*[]byte)
	ad := append(append((*adp)[:0], ciphertext[:hs]...), context...)
	out, err := k.aead.Open(dst, ciphertext[hs:hs+ns], ciphertext[hs+ns:], ad)
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
func (kr *Keyring) keyFor(ciphertext []byte) (header, *key, error) {
	// Fast path: a v3 value under the primary key, the common case.
	if p := kr.load().primary; p != nil && len(ciphertext) >= headerSize && ciphertext[0] == version3 &&
		ciphertext[1] == byte(classKeyring) && ciphertext[2] == byte(p.Algorithm) &&
		KeyID(binary.BigEndian.Uint32(ciphertext[3:7])) == p.ID &&
		len(ciphertext) >= headerSize+p.Algorithm.NonceSize()+TagSize {
		return header{Version: version3, Class: classKeyring, Algorithm: p.Algorithm, KeyID: p.ID,
			ContextCheck: binary.BigEndian.Uint32(ciphertext[7:11])}, p, nil
	}
	h, err := parseHeader(ciphertext)
	if err != nil {
		return h, nil, err
	}
	if h.Class != classKeyring {
		return h, nil, fmt.Errorf("%w: a subject key sealed this value, not a keyring key", ErrUnknownKey)
	}
	k, ok := kr.load().byID[h.KeyID]
	if !ok {
		reloaded := kr.reloadForUnknown()
		if reloaded {
			k, ok = kr.load().byID[h.KeyID]
		}
		if !ok {
			return h, nil, &KeyError{ID: h.KeyID, Err: ErrUnknownKey, Hint: kr.unknownKeyHint(reloaded)}
		}
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
func (k *key) checkMatches(h header, ciphertext, context []byte) bool {
	if h.Version == version1 {
		c := k.check.Get().(*checker)
		c.in = append(c.in[:0], context...) // crc32 would make context escape
		sum := crc32.Checksum(c.in, castagnoli)
		k.check.Put(c)
		return sum == h.ContextCheck
	}
	hs := h.size()
	nonce := ciphertext[hs : hs+k.Algorithm.NonceSize()]
	var want, got [checkSize]byte
	if h.Version == version2 {
		binary.BigEndian.PutUint32(want[:], k.contextCheckV2(nonce, context))
	} else {
		adp := adPool.Get().(*[]byte)
		*adp = append((*adp)[:0], context...) // context must not escape
		want, *adp = k.checkV3(nonce, *adp, 0)
		adPool.Put(adp)
	}
	binary.BigEndian.PutUint32(got[:], h.ContextCheck)
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// checkV3 is the v3 context check of the context buf[from:], for a value
// with this nonce (FORMAT.md):
//
//   - AES-GCM keys: CRC-32C(context) XOR the first 4 bytes of
//     AES(K_check, nonce ‖ 0x00000000), one block cipher call;
//   - XChaCha20-Poly1305 keys: the first 4 bytes of the tag of
//     XChaCha20-Poly1305 under K_check over the empty plaintext, with the
//     context as associated data.
//
// Either way the check is masked by a pseudorandom function of a fresh
// random nonce under a key derived from the data key: it reveals nothing
// about the context without the key, and equal contexts give unrelated
// checks. buf is a pooled buffer, never a caller's (interface calls make
// their arguments escape); the work areas are its spare capacity, which
// does not overlap the context, so that a check allocates nothing. It
// returns buf, grown if it had to be.
func (k *key) checkV3(nonce, buf []byte, from int) ([checkSize]byte, []byte) {
	n := len(buf)
	buf = slices.Grow(buf, 2*aes.BlockSize)
	if k.checkAEAD != nil {
		tag := k.checkAEAD.Seal(buf[n:n], nonce, nil, buf[from:n])
		return [checkSize]byte(tag[:checkSize]), buf
	}
	in, out := buf[n:n+aes.BlockSize], buf[n+aes.BlockSize:n+2*aes.BlockSize]
	copy(in, nonce)
	clear(in[len(nonce):])
	k.checkBlock.Encrypt(out, in)
	var c [checkSize]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum(buf[from:n], castagnoli)^binary.BigEndian.Uint32(out))
	return c, buf
}

// contextCheckV2 is v2's check (read only): the first 4 bytes of
// HMAC-SHA-256(K, nonce ‖ context),
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
	v := binary.BigEndian.Uint32(sum[:checkSize])
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
