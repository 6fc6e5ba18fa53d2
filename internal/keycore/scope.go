package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/fips140"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"
)

// Ciphertext v4 (FORMAT.md) seals each value under a key derived from a
// keyring key (or a subject key) for the value's scope — for the field
// layer, its table and column — so that the holder of one scope's derived
// keys (a grant) opens that scope and nothing else, and the scope need not
// travel in every value's associated data. Its header has v3's layout,
// but the associated data is the first 7 header bytes and the context:
// the context check (bytes 7 to 11) is computed after the AEAD has chosen
// the nonce, which lets the FIPS 140-3 module generate it
// (cipher.NewGCMWithRandomNonce), and is not authenticated.
const (
	version4 = 0x04
	// adHead is how many header bytes a v4 value authenticates: version,
	// class, algorithm and key ID.
	adHead = 7
	// scopeInfo prefixes the scope in the HKDF info of a scoped key.
	scopeInfo = "ward ciphertext v4 scope\x00"
	// checkInfoV4 is the HKDF info of a scoped key's context-check key.
	checkInfoV4 = "ward ciphertext v4 context check"
)

// FieldScope returns the scope of the values of table.column (the field
// layer's columns): "ward/field/v4" 0x00 uvarint(len(table)) table
// uvarint(len(column)) column.
func FieldScope(table, column string) string {
	b := append([]byte("ward/field/v4"), 0)
	b = binary.AppendUvarint(b, uint64(len(table)))
	b = append(b, table...)
	b = binary.AppendUvarint(b, uint64(len(column)))
	return string(append(b, column...))
}

// scopedKey is a key derived for one scope from a keyring or subject key.
type scopedKey struct {
	alg  Algorithm
	aead cipher.AEAD // AES-GCM: it generates the nonce (NewGCMWithRandomNonce)
	own  bool        // the AEAD takes a nonce ward generates (XChaCha20-Poly1305)
	// checkBlock or checkAEAD key the context check, as in v3.
	checkBlock cipher.Block
	checkAEAD  cipher.AEAD
	head       uint64 // the header's first 7 bytes, in the top 56 bits
	ns         int
	uses       *usage // the seals of the keyring key it derives from (nil: not counted)
}

// derive returns k's key for scope: HKDF-SHA-256(ikm = k's material, salt =
// none, info = "ward ciphertext v4 scope" 0x00 scope, length = the
// algorithm's key size), and its check key.
func (k *key) derive(scope string) (*scopedKey, error) {
	if k.Algorithm == XChaCha20Poly1305 && fipsOn() {
		return nil, ErrNotApproved
	}
	material, err := hkdfScope(k.material, scope, k.Algorithm.KeySize())
	if err != nil {
		return nil, err
	}
	defer clear(material)
	sk, err := newScopedKey(k.Algorithm, k.head, material)
	if sk != nil {
		sk.uses = k.uses
	}
	return sk, err
}

// hkdfScope is K_scope of FORMAT.md: the material of a key for scope.
func hkdfScope(material []byte, scope string, n int) ([]byte, error) {
	m, err := hkdf.Key(sha256.New, material, nil, scopeInfo+scope, n)
	if err != nil {
		return nil, fmt.Errorf("keyring: deriving a scope's key: %w", err)
	}
	return m, nil
}

// fipsOn reports whether the FIPS 140-3 mode is on.
func fipsOn() bool { return fips140.Enabled() }

// newScopedKey builds a scoped key from its material; head3 is the v3
// head of the key it derives from (class, algorithm, ID).
func newScopedKey(alg Algorithm, head3 uint64, material []byte) (*scopedKey, error) {
	sk := &scopedKey{alg: alg, ns: alg.NonceSize(), head: head3&^(0xff<<56) | uint64(version4)<<56}
	ck, err := hkdf.Key(sha256.New, material, nil, checkInfoV4, alg.KeySize())
	if err != nil {
		return nil, fmt.Errorf("keyring: deriving a scope's check key: %w", err)
	}
	defer clear(ck)
	if alg == XChaCha20Poly1305 {
		sk.own = true
		if sk.aead, err = chacha20poly1305.NewX(material); err == nil {
			sk.checkAEAD, err = chacha20poly1305.NewX(ck)
		}
		return sk, err
	}
	b, err := aes.NewCipher(material)
	if err != nil {
		return nil, fmt.Errorf("keyring: %v: %w", alg, err)
	}
	if sk.aead, err = cipher.NewGCMWithRandomNonce(b); err != nil {
		return nil, fmt.Errorf("keyring: %v: %w", alg, err)
	}
	sk.checkBlock, err = aes.NewCipher(ck)
	return sk, err
}

// appendSeal seals plaintext as a v4 value. ad is the header's room (11
// bytes) followed by the context; the 7 authenticated header bytes are
// written at its end, so that the associated data is ad[4:].
func (s *scopedKey) appendSeal(dst, plaintext, ad []byte) []byte {
	total := headerSize + s.ns + len(plaintext) + TagSize
	ret, out := sliceForAppend(dst, total)
	binary.BigEndian.PutUint64(out, s.head)
	a := ad[headerSize-adHead:]
	copy(a, out[:adHead])
	if s.own {
		nonce := out[headerSize : headerSize+s.ns]
		rand.Read(nonce)
		s.aead.Seal(out[:headerSize+s.ns], nonce, plaintext, a)
	} else {
		s.aead.Seal(out[:headerSize], nil, plaintext, a) // writes nonce ‖ ciphertext ‖ tag
	}
	s.uses.sealed(out[headerSize])
	c := s.check(out[headerSize:headerSize+s.ns], ad, headerSize)
	copy(out[adHead:headerSize], c[:])
	return ret
}

// open opens a v4 value whose header names s's class, algorithm and key.
func (s *scopedKey) open(dst, ciphertext, ad []byte) ([]byte, error) {
	if len(ciphertext) < headerSize+s.ns+TagSize {
		return dst, ErrTruncated
	}
	a := ad[headerSize-adHead:]
	copy(a, ciphertext[:adHead])
	var out []byte
	var err error
	if s.own {
		out, err = s.aead.Open(dst, ciphertext[headerSize:headerSize+s.ns], ciphertext[headerSize+s.ns:], a)
	} else {
		out, err = s.aead.Open(dst, nil, ciphertext[headerSize:], a)
	}
	if err != nil {
		if !s.checkMatches(ciphertext, ad) {
			return dst, ErrWrongContext
		}
		return dst, ErrAuthentication
	}
	return out, nil
}

// checkMatches compares a v4 value's context check with the context
// ad[11:]'s.
func (s *scopedKey) checkMatches(ciphertext, ad []byte) bool {
	want := s.check(ciphertext[headerSize:headerSize+s.ns], ad, headerSize)
	return subtle.ConstantTimeCompare(want[:], ciphertext[adHead:headerSize]) == 1
}

// check is the context check of the context buf[from:] for a value with
// this nonce, as v3's (checkV3) under the scoped check key.
func (s *scopedKey) check(nonce, buf []byte, from int) [checkSize]byte {
	return maskedCheck(s.checkBlock, s.checkAEAD, nonce, buf, from)
}

// Scope seals and opens ciphertext v4 values of one scope under a
// keyring's keys, each derived for the scope on first use and cached until
// the keyring changes. Get one per scope with [Keyring.Scope] (the field
// layer keeps one per column); it is safe for concurrent use.
type Scope struct {
	scope string
	kr    *Keyring
	cache atomic.Pointer[scopeCache]
	// fixed holds a grant's keys (kr is nil): the scope opens with them
	// only, and never seals.
	fixed map[KeyID]*scopedKey
	grant string
}

// scopeCache holds the derived keys of one keyring snapshot.
type scopeCache struct {
	snap    *snapshot
	primary *scopedKey
	pid     KeyID
	sealErr error    // why the primary seals nothing (ErrNotApproved)
	byID    sync.Map // KeyID → *scopedKey
}

// Scope returns the keyring's view of one scope (see [FieldScope]).
func (kr *Keyring) Scope(scope string) *Scope {
	return &Scope{scope: scope, kr: kr}
}

// Name returns the scope.
func (s *Scope) Name() string { return s.scope }

// Holds reports whether the scope opens values under the keyring key id:
// one of the keyring's keys, or of the grant's.
func (s *Scope) Holds(id KeyID) bool {
	if s.kr == nil {
		_, ok := s.fixed[id]
		return ok
	}
	_, ok := s.kr.Lookup(id)
	return ok
}

// current returns the cache for the keyring's current snapshot.
func (s *Scope) current() (*scopeCache, error) {
	snap := s.kr.load()
	c := s.cache.Load()
	if c != nil && c.snap == snap {
		return c, nil
	}
	c = &scopeCache{snap: snap}
	if snap.primary != nil {
		p, err := snap.primary.derive(s.scope)
		switch {
		case errors.Is(err, ErrNotApproved):
			c.sealErr = err // it seals nothing; other keys still open
		case err != nil:
			return nil, err
		default:
			c.primary, c.pid = p, snap.primary.ID
			c.byID.Store(c.pid, p)
		}
	}
	s.cache.Store(c)
	return c, nil
}

// AppendSealAD seals plaintext under the primary key's key for the scope as
// a v4 value appended to dst. ad is as for [Keyring.AppendSealAD]: 11 bytes
// of room, then the context, with 32 bytes of spare capacity.
func (s *Scope) AppendSealAD(dst, plaintext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if s.fixed != nil {
		return dst, ErrGrantSeals
	}
	c, err := s.current()
	if err != nil {
		return dst, err
	}
	if c.sealErr != nil {
		return dst, c.sealErr
	}
	if c.primary == nil {
		return dst, ErrNoPrimary
	}
	return c.primary.appendSeal(dst, plaintext, ad), nil
}

// Seal seals plaintext for ad as a v4 value of the scope.
func (s *Scope) Seal(plaintext, ad []byte) ([]byte, error) {
	adp, full := pooledAD(ad)
	defer releaseAD(adp, full)
	return s.AppendSealAD(nil, plaintext, full)
}

// Open opens a v4 value of the scope sealed for ad.
func (s *Scope) Open(ciphertext, ad []byte) ([]byte, error) {
	adp, full := pooledAD(ad)
	defer releaseAD(adp, full)
	return s.AppendOpenAD(nil, ciphertext, full)
}

// AppendOpenAD opens a v4 value sealed under a keyring key for the scope,
// appending the plaintext to dst; ad is as for AppendSealAD. On error dst
// is returned unchanged.
func (s *Scope) AppendOpenAD(dst, ciphertext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	k, err := s.keyFor(ciphertext)
	if err != nil {
		return dst, err
	}
	return k.open(dst, ciphertext, ad)
}

// ContextMatches reports whether a v4 value's context check matches
// ad, without decrypting (a hint, as [Keyring.ContextMatches]).
func (s *Scope) ContextMatches(ciphertext, ad []byte) (bool, error) {
	k, err := s.keyFor(ciphertext)
	if err != nil {
		return false, err
	}
	adp, full := pooledAD(ad)
	defer releaseAD(adp, full)
	return k.checkMatches(ciphertext, full), nil
}

// keyFor returns the scoped key a v4 class-1 value names.
func (s *Scope) keyFor(ciphertext []byte) (*scopedKey, error) {
	if s.fixed != nil {
		return s.granted(ciphertext)
	}
	c, err := s.current()
	if err != nil {
		return nil, err
	}
	if c.primary != nil && len(ciphertext) >= headerSize && binary.BigEndian.Uint64(ciphertext)&^0xff == c.primary.head {
		return c.primary, nil
	}
	k, err := s.derived(c, ciphertext)
	if err != nil {
		return nil, err
	}
	if k.alg != Algorithm(ciphertext[2]) {
		return nil, fmt.Errorf("%w: algorithm %v does not match the key's (%v)", ErrMalformed, Algorithm(ciphertext[2]), k.alg)
	}
	return k, nil
}

// derived finds (or derives) the key of a v4 class-1 value outside the
// fast path.
func (s *Scope) derived(c *scopeCache, ciphertext []byte) (*scopedKey, error) {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return nil, err
	}
	if h.Version != version4 {
		return nil, fmt.Errorf("%w: a v%d value, not a scope's (v4)", ErrMalformed, h.Version)
	}
	if h.Class != classKeyring {
		return nil, fmt.Errorf("%w: a subject key sealed this value, not a keyring key", ErrUnknownKey)
	}
	if v, ok := c.byID.Load(h.KeyID); ok {
		return v.(*scopedKey), nil
	}
	// An unknown key: the keyring's own lookup (which re-reads the file
	// once) says why, or finds it.
	_, k, err := s.kr.keyFor(ciphertext)
	if err != nil {
		return nil, err
	}
	sk, err := k.derive(s.scope)
	if err != nil {
		return nil, err
	}
	c.byID.Store(h.KeyID, sk)
	return sk, nil
}

// scopeEntry is one scope's key derived from a subject key.
type scopeEntry struct {
	scope string
	key   *scopedKey
}

// scoped returns sk's key for scope, derived on first use and kept (a
// subject key serves a handful of columns).
func (sk *SubjectKey) scoped(scope string) (*scopedKey, error) {
	if es := sk.scopes.Load(); es != nil {
		for _, e := range *es {
			if e.scope == scope {
				return e.key, nil
			}
		}
	}
	if sk.fixed {
		return nil, fmt.Errorf("%w: the grant opens one column's values of this subject", ErrNotGranted)
	}
	d, err := sk.k.derive(scope)
	if err != nil {
		return nil, err
	}
	for {
		old := sk.scopes.Load()
		var es []scopeEntry
		if old != nil {
			es = append(es, *old...)
		}
		if len(es) >= maxSubjectScopes {
			es = es[1:]
		}
		es = append(es, scopeEntry{scope, d})
		if sk.scopes.CompareAndSwap(old, &es) {
			return d, nil
		}
	}
}

// maxSubjectScopes bounds the scopes a subject key keeps derived keys for.
const maxSubjectScopes = 8

// AppendSealScopedAD seals plaintext under the subject key's key for scope
// as a class-2 v4 value appended to dst; ad is as for
// [Keyring.AppendSealAD].
func (sk *SubjectKey) AppendSealScopedAD(dst, plaintext []byte, scope string, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if sk.fixed {
		return dst, ErrGrantSeals
	}
	k, err := sk.scoped(scope)
	if err != nil {
		return dst, err
	}
	return k.appendSeal(dst, plaintext, ad), nil
}

// AppendOpenScopedAD opens a class-2 v4 value sealed under this key for
// scope; ad is as for [Keyring.AppendOpenAD]. On error dst is returned
// unchanged.
func (sk *SubjectKey) AppendOpenScopedAD(dst, ciphertext []byte, scope string, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if err := sk.names(ciphertext, version4); err != nil {
		return dst, err
	}
	k, err := sk.scoped(scope)
	if err != nil {
		return dst, err
	}
	return k.open(dst, ciphertext, ad)
}

// names checks that a ciphertext of the given version names this subject
// key (class, version and algorithm).
func (sk *SubjectKey) names(ciphertext []byte, version byte) error {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return err
	}
	if h.Version != version {
		return fmt.Errorf("%w: a v%d value where v%d was expected", ErrMalformed, h.Version, version)
	}
	if h.Class != classSubject {
		return fmt.Errorf("%w: a keyring key sealed this value", ErrSubjectKey)
	}
	if uint32(h.KeyID) != sk.Version() {
		return &KeyError{ID: h.KeyID, Err: ErrUnknownKey, Hint: fmt.Sprintf("the value names subject key version %d, this is version %d", uint32(h.KeyID), sk.Version())}
	}
	if h.Algorithm != sk.k.Algorithm {
		return fmt.Errorf("%w: algorithm %v does not match the subject key (%v)", ErrMalformed, h.Algorithm, sk.k.Algorithm)
	}
	return nil
}

// granted returns the grant's key a v4 class-1 value names.
func (s *Scope) granted(ciphertext []byte) (*scopedKey, error) {
	h, err := parseHeader(ciphertext)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Version != version4:
		return nil, fmt.Errorf("%w: grant %s opens ciphertext v4 only, this value is v%d (ward reseal moves a column to v4)", ErrNotGranted, s.grant, h.Version)
	case h.Class != classKeyring:
		return nil, fmt.Errorf("%w: grant %s does not open values sealed under subject keys", ErrNotGranted, s.grant)
	}
	k, ok := s.fixed[h.KeyID]
	if !ok {
		return nil, &KeyError{ID: h.KeyID, Err: ErrUnknownKey, Hint: fmt.Sprintf("grant %s does not derive from this key (issue a new grant after a rotation)", s.grant)}
	}
	if k.alg != h.Algorithm {
		return nil, fmt.Errorf("%w: algorithm %v does not match the grant's key %v (%v)", ErrMalformed, h.Algorithm, h.KeyID, k.alg)
	}
	return k, nil
}
