package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/fips140"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"sync"
)

// adPool holds scratch buffers for associated data, so that sealing and
// opening a context the caller owns allocate only their output.
var adPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// pooledAD returns a pooled buffer and in it the header's room followed by
// a copy of context (which may be on the caller's stack); releaseAD gives
// it back.
func pooledAD(ad []byte) (*[]byte, []byte) {
	adp := adPool.Get().(*[]byte)
	return adp, append((*adp)[:headerSize], ad...)
}

// releaseAD returns to the pool a buffer pooledAD gave, ad being what it
// holds now (possibly grown).
func releaseAD(adp *[]byte, ad []byte) {
	*adp = ad[:0]
	adPool.Put(adp)
}

// errV3InFIPS means a v3 seal was asked for in the FIPS 140-3 mode, whose
// module draws nonces itself: v4 is sealed there.
var errV3InFIPS = errors.New("keyring: ciphertext v3 cannot be sealed in the FIPS 140-3 mode (its check needs the nonce first): seal v4")

// errNoRoom reports associated data too short to hold a header.
func errNoRoom(ad []byte) error {
	return fmt.Errorf("keyring: associated data of %d bytes has no room for a header", len(ad))
}

// Seal encrypts plaintext under the primary key, bound to ad (associated
// data: for a database value, where it lives), and
// returns a binary ciphertext: format v3, or in the FIPS 140-3 mode
// (crypto/fips140.Enabled), format v4 of the empty scope, whose nonce the
// module generates. The same ad must be passed to Open.
func (kr *Keyring) Seal(plaintext, ad []byte) ([]byte, error) {
	return kr.AppendSeal(nil, plaintext, ad)
}

// AppendSeal is like Seal but appends the ciphertext to dst.
func (kr *Keyring) AppendSeal(dst, plaintext, ad []byte) ([]byte, error) {
	if fips140.Enabled() {
		adp, full := pooledAD(ad)
		defer releaseAD(adp, full)
		return kr.unscoped().AppendSealAD(dst, plaintext, full)
	}
	k := kr.load().primary
	if k == nil {
		return nil, ErrNoPrimary
	}
	if k.refused {
		return nil, ErrNotApproved
	}
	return k.appendSealContext(dst, plaintext, ad), nil
}

// unscoped returns the keyring's scope of the empty name, which opens v4
// values of Seal (in the FIPS 140-3 mode) and Open.
func (kr *Keyring) unscoped() *Scope {
	if s := kr.plainScope.Load(); s != nil {
		return s
	}
	kr.plainScope.CompareAndSwap(nil, kr.Scope(""))
	return kr.plainScope.Load()
}

// AppendSealAD is AppendSeal (format v3; v4 of the empty scope in the FIPS
// 140-3 mode) for callers that assemble the context
// themselves, after 11 reserved bytes (the v3 header's size, the largest
// ciphertext header, which the keyring writes there): ad[11:] is the
// context and ad[:11] is overwritten with the new value's header,
// so that the associated data (header ‖ context) reaches the AEAD without
// a copy. The AEAD is called through an interface, so ad escapes: pass a
// buffer from a pool, never a stack array, with 32 bytes of spare
// capacity, which the context check uses as a work area (without it,
// sealing allocates). ad must not be used by another goroutine meanwhile.
func (kr *Keyring) AppendSealAD(dst, plaintext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if fips140.Enabled() {
		return kr.unscoped().AppendSealAD(dst, plaintext, ad)
	}
	k := kr.load().primary
	if k == nil {
		return nil, ErrNoPrimary
	}
	if k.refused {
		return nil, ErrNotApproved
	}
	return k.appendSeal(dst, plaintext, ad), nil
}

// appendSealContext seals under k for a context the caller owns (it may be
// on the caller's stack): it is copied into a pooled buffer after the
// header's room.
func (k *key) appendSealContext(dst, plaintext, ad []byte) []byte {
	adp, full := pooledAD(ad)
	out := k.appendSeal(dst, plaintext, full)
	releaseAD(adp, full)
	return out
}

// appendSeal seals plaintext as a v3 ciphertext of k's key class under k;
// the header names k's ID (for a subject key, its version). ad is
// the header's room followed by the context; the header is written there
// and the context check computed over ad[11:].
func (k *key) appendSeal(dst, plaintext, ad []byte) []byte {
	ns := k.ns
	total := headerSize + ns + len(plaintext) + TagSize
	ret, out := sliceForAppend(dst, total)
	nonce := out[headerSize : headerSize+ns]
	rand.Read(nonce)
	k.uses.sealed(nonce[0])
	check := k.checkV3(nonce, ad, headerSize)
	binary.BigEndian.PutUint64(out, k.head|uint64(check[0]))
	copy(out[8:11], check[1:])
	copy(ad, out[:headerSize])
	k.aead.Seal(out[:headerSize+ns], nonce, plaintext, ad)
	return ret
}

// Open authenticates and decrypts a binary ciphertext (v1 to v3, or v4 of
// the empty scope) sealed for ad. On any error it returns nil
// plaintext.
func (kr *Keyring) Open(ciphertext, ad []byte) ([]byte, error) {
	return kr.AppendOpen(nil, ciphertext, ad)
}

// AppendOpen is like Open but appends the plaintext to dst. On error dst is
// returned unchanged.
func (kr *Keyring) AppendOpen(dst, ciphertext, ad []byte) ([]byte, error) {
	adp, full := pooledAD(ad)
	out, err := kr.AppendOpenAD(dst, ciphertext, full)
	releaseAD(adp, full)
	return out, err
}

// AppendOpenAD is AppendOpen for callers that assemble the context
// themselves, as for [Keyring.AppendSealAD]: ad[11:] is the
// context, and ad[:11] is overwritten with (the end of) the
// value's header. ad escapes and must not be used by another goroutine
// meanwhile.
func (kr *Keyring) AppendOpenAD(dst, ciphertext, ad []byte) ([]byte, error) {
	// Fast path: a v3 value under the primary key, the common case; the
	// rest (older versions, other keys, errors) is in appendOpenAD.
	if p := kr.load().primary; p != nil && !p.refused && len(ad) >= headerSize && p.heads(ciphertext) {
		return p.openV3(dst, ciphertext, ad)
	}
	return kr.appendOpenAD(dst, ciphertext, ad)
}

// appendOpenAD is AppendOpenAD's path for any other value.
func (kr *Keyring) appendOpenAD(dst, ciphertext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if len(ciphertext) > 0 && ciphertext[0] == version4 {
		return kr.unscoped().AppendOpenAD(dst, ciphertext, ad)
	}
	h, k, err := kr.keyFor(ciphertext)
	if err != nil {
		return dst, err
	}
	return k.appendOpen(h, dst, ciphertext, ad)
}

// heads reports whether ciphertext is long enough for a v3 value under k
// and its header names k (version, class, algorithm and ID).
func (k *key) heads(ciphertext []byte) bool {
	return len(ciphertext) >= headerSize+k.ns+TagSize &&
		binary.BigEndian.Uint64(ciphertext)&^0xff == k.head
}

// openV3 opens a v3 value whose header heads(ciphertext) matched.
func (k *key) openV3(dst, ciphertext, ad []byte) ([]byte, error) {
	copy(ad, ciphertext[:headerSize])
	var out []byte
	var err error
	if k.random {
		out, err = k.aead.Open(dst, nil, ciphertext[headerSize:], ad)
	} else {
		out, err = k.aead.Open(dst, ciphertext[headerSize:headerSize+k.ns], ciphertext[headerSize+k.ns:], ad)
	}
	if err != nil {
		return dst, k.openFailure(ciphertext, ad[headerSize:])
	}
	return out, nil
}

// openFailure says why a value whose header parses did not open: the
// AEAD authenticated the context with the header, so the check is needed
// only to tell a value presented under another context from a damaged
// one.
func (k *key) openFailure(ciphertext, ad []byte) error {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return err
	}
	if !k.checkMatches(h, ciphertext, ad) {
		return ErrWrongContext
	}
	return ErrAuthentication
}

// appendOpen opens a ciphertext whose header h names k. ad is the header's
// room followed by the context: the header is copied to its end, so that
// the associated data is header ‖ context for every version's header size.
func (k *key) appendOpen(h header, dst, ciphertext, ad []byte) ([]byte, error) {
	ns, hs := k.Algorithm.NonceSize(), h.size()
	a := ad[headerSize-hs:]
	copy(a, ciphertext[:hs])
	var out []byte
	var err error
	if k.random {
		out, err = k.aead.Open(dst, nil, ciphertext[hs:], a)
	} else {
		out, err = k.aead.Open(dst, ciphertext[hs:hs+ns], ciphertext[hs+ns:], a)
	}
	if err != nil {
		return dst, k.openFailure(ciphertext, ad[headerSize:])
	}
	return out, nil
}

// ContextMatches reports whether the context check of a ciphertext (its
// header's check of the associated data, FORMAT.md) matches ad, without
// decrypting: a cheap test, for jobs that look for values
// bound under an older layout of their associated data, which ad a value was
// sealed for. A true answer is a hint (the check is 32 bits), not an
// authentication: only Open authenticates.
func (kr *Keyring) ContextMatches(ciphertext, ad []byte) (bool, error) {
	if len(ciphertext) > 0 && ciphertext[0] == version4 {
		return kr.unscoped().ContextMatches(ciphertext, ad)
	}
	h, k, err := kr.keyFor(ciphertext)
	if err != nil {
		return false, err
	}
	return k.checkMatches(h, ciphertext, ad), nil
}

// keyFor parses the header and finds an enabled key of the right
// algorithm.
func (kr *Keyring) keyFor(ciphertext []byte) (header, *key, error) {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return h, nil, err
	}
	if h.Class != classKeyring {
		return h, nil, fmt.Errorf("%w: a subject key sealed this value, not a keyring key", ErrUnknownKey)
	}
	k, ok := kr.load().byID[h.KeyID]
	if !ok && kr.isRemoved(h.KeyID) {
		return h, nil, &KeyError{ID: h.KeyID, Err: ErrUnknownKey, Hint: retiredHint}
	}
	if !ok {
		// Looked up again whether or not this call re-read the file: a
		// re-read by another caller may have loaded the key meanwhile.
		reloaded := kr.reloadForUnknown()
		k, ok = kr.load().byID[h.KeyID]
		if !ok {
			return h, nil, &KeyError{ID: h.KeyID, Err: ErrUnknownKey, Hint: kr.unknownKeyHint(reloaded)}
		}
	}
	if k.State == Disabled {
		return h, nil, &KeyError{ID: h.KeyID, Err: ErrKeyDisabled}
	}
	if k.refused {
		return h, nil, &KeyError{ID: h.KeyID, Err: ErrNotApproved}
	}
	if k.Algorithm != h.Algorithm {
		return h, nil, fmt.Errorf("%w: algorithm %v does not match key %v (%v)", ErrMalformed, h.Algorithm, k.ID, k.Algorithm)
	}
	return h, k, nil
}

// checkMatches compares the header's context check with context's.
func (k *key) checkMatches(h header, ciphertext, ad []byte) bool {
	if h.Version == version1 {
		c := k.check.Get().(*checker)
		c.in = append(c.in[:0], ad...) // crc32 would make ad escape
		sum := crc32.Checksum(c.in, castagnoli)
		k.check.Put(c)
		return sum == h.ContextCheck
	}
	hs := h.size()
	nonce := ciphertext[hs : hs+k.Algorithm.NonceSize()]
	var want, got [checkSize]byte
	if h.Version == version2 {
		binary.BigEndian.PutUint32(want[:], k.contextCheckV2(nonce, ad))
	} else {
		adp, full := pooledAD(ad) // ad must not escape
		want = k.checkV3(nonce, full, headerSize)
		releaseAD(adp, full)
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
// checks. buf is a pooled buffer, never a caller's stack (interface calls
// make their arguments escape); the work areas are its spare capacity,
// which does not overlap the context, so that a check allocates nothing
// when buf has 32 bytes to spare (else it allocates a work area).
func (k *key) checkV3(nonce, buf []byte, from int) [checkSize]byte {
	return maskedCheck(k.checkBlock, k.checkAEAD, nonce, buf, from)
}

// maskedCheck computes a v3 or v4 context check under a check key (an AES
// block cipher, or an XChaCha20-Poly1305 AEAD when block is nil), as
// checkV3 describes.
func maskedCheck(block cipher.Block, a cipher.AEAD, nonce, buf []byte, from int) [checkSize]byte {
	n := len(buf)
	work := buf[n:cap(buf)]
	if len(work) < 2*aes.BlockSize {
		work = make([]byte, 2*aes.BlockSize)
	}
	if block == nil {
		tag := a.Seal(work[:0], nonce, nil, buf[from:n])
		return [checkSize]byte(tag[:checkSize])
	}
	in, out := work[:aes.BlockSize], work[aes.BlockSize:2*aes.BlockSize]
	copy(in, nonce)
	clear(in[len(nonce):])
	block.Encrypt(out, in)
	var c [checkSize]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum(buf[from:n], castagnoli)^binary.BigEndian.Uint32(out))
	return c
}

// contextCheckV2 is v2's check (read only): the first 4 bytes of
// HMAC-SHA-256(K, nonce ‖ context),
// K = HKDF-SHA-256(key material, info "ward ciphertext v2 context check").
// The nonce makes checks of equal contexts differ between values.
func (k *key) contextCheckV2(nonce, ad []byte) uint32 {
	c := k.check.Get().(*checker)
	c.mac.Reset()
	// Copied first: passing ad to an interface method would make
	// every caller's ad escape to the heap.
	c.in = append(append(c.in[:0], nonce...), ad...)
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
