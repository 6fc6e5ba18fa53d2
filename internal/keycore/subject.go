package keycore

import (
	"crypto/fips140"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A SubjectKey is a subject's own data key (a user's, a tenant's): key
// class 2 of ciphertext v3. Values sealed under it name its version in
// their header, not a keyring key; the subject they belong to is bound
// through their context. A subject key is stored only wrapped — by the
// keyring ([Keyring.WrapSubjectKey]), so that keyring rotation and the
// master key or KMS that guards the keyring file still apply — and deleting
// every wrapped copy erases what it sealed.
//
// Printing a SubjectKey shows its version and algorithm, never material.
type SubjectKey struct {
	k      *key
	scopes atomic.Pointer[[]scopeEntry] // keys derived for v4 scopes
	// fixed marks a grant reader's key (GrantedSubjectKey): its one scope
	// in scopes is all it opens; it never seals or derives.
	fixed bool
}

// ErrSubjectKey means a value sealed under a subject key was given to a
// keyring key, or the reverse.
var ErrSubjectKey = errors.New("keyring: value and key are of different key classes")

// NewSubjectKey returns a fresh random subject key of the given algorithm
// and version. Versions start anywhere (the field layer starts a subject at
// a random version, so that a key re-created after a deletion never has the
// version its older values name) and grow by one with each rotation; 0 is
// not a version.
func NewSubjectKey(alg Algorithm, version uint32) (*SubjectKey, error) {
	if !alg.valid() {
		return nil, fmt.Errorf("keyring: unsupported algorithm %v", alg)
	}
	if alg == XChaCha20Poly1305 && fipsOn() {
		return nil, ErrNotApproved
	}
	if version == 0 {
		return nil, errors.New("keyring: subject key version 0 is not a version")
	}
	material := make([]byte, alg.KeySize())
	rand.Read(material)
	return newSubjectKey(alg, version, material)
}

func newSubjectKey(alg Algorithm, version uint32, material []byte) (*SubjectKey, error) {
	k, err := newKey(KeyInfo{ID: KeyID(version), Algorithm: alg, State: Primary, Created: time.Time{}}, material)
	if err != nil {
		return nil, err
	}
	k.setClass(classSubject)
	return &SubjectKey{k: k}, nil
}

// Version returns the key's version, the number the header of each value
// sealed under it carries.
func (sk *SubjectKey) Version() uint32 { return uint32(sk.k.ID) }

// Algorithm returns the key's AEAD algorithm.
func (sk *SubjectKey) Algorithm() Algorithm { return sk.k.Algorithm }

// String redacts the material.
func (sk *SubjectKey) String() string {
	return fmt.Sprintf("subject-key{version=%d alg=%v material=REDACTED}", sk.Version(), sk.k.Algorithm)
}

// GoString redacts like String.
func (sk *SubjectKey) GoString() string { return sk.String() }

// Format redacts like String, whatever the verb.
func (sk *SubjectKey) Format(f fmt.State, _ rune) { f.Write([]byte(sk.String())) }

// AppendSeal seals plaintext as a class-2 v3 ciphertext (in the FIPS 140-3
// mode, v4 of the empty scope) bound to ad and appends it to dst. In
// that mode it panics for a key of an algorithm the mode refuses, which
// only unwrapping a stored key can give ([NewSubjectKey] refuses them).
func (sk *SubjectKey) AppendSeal(dst, plaintext, ad []byte) []byte {
	if sk.fixed {
		panic("keyring: AppendSeal of a grant reader's subject key (GrantedSubjectKey), which never seals")
	}
	if fips140.Enabled() {
		adp, full := pooledAD(ad)
		defer releaseAD(adp, full)
		out, err := sk.AppendSealScopedAD(dst, plaintext, "", full)
		if err != nil { // a key the mode refuses, unwrapped: NewSubjectKey makes none
			panic("keyring: AppendSeal of a subject key the FIPS 140-3 mode refuses (AppendSealScopedAD returns the error): " + err.Error())
		}
		return out
	}
	return sk.k.appendSealContext(dst, plaintext, ad)
}

// AppendSealAD is AppendSeal with the context assembled by the caller
// after 11 reserved bytes, as for [Keyring.AppendSealAD].
func (sk *SubjectKey) AppendSealAD(dst, plaintext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	if sk.fixed {
		return dst, ErrGrantSeals
	}
	if sk.k.random || sk.k.refused {
		return dst, errV3InFIPS
	}
	return sk.k.appendSeal(dst, plaintext, ad), nil
}

// AppendOpen opens a class-2 ciphertext sealed under this key for ad
// and appends the plaintext to dst. A value of another class, or of
// another version, is refused without decrypting; on error dst is
// returned unchanged.
func (sk *SubjectKey) AppendOpen(dst, ciphertext, ad []byte) ([]byte, error) {
	adp, full := pooledAD(ad)
	defer releaseAD(adp, full)
	if len(ciphertext) > 0 && ciphertext[0] == version4 {
		return sk.AppendOpenScopedAD(dst, ciphertext, "", full)
	}
	return sk.AppendOpenAD(dst, ciphertext, full)
}

// AppendOpenAD is AppendOpen with the context assembled by the caller
// after 11 reserved bytes, as for [Keyring.AppendOpenAD].
func (sk *SubjectKey) AppendOpenAD(dst, ciphertext, ad []byte) ([]byte, error) {
	if len(ad) < headerSize {
		return dst, errNoRoom(ad)
	}
	k := sk.k
	if k.refused {
		return dst, ErrNotApproved
	}
	if sk.fixed {
		return dst, fmt.Errorf("%w: a grant opens ciphertext v4 only", ErrNotGranted)
	}
	// Fast path: a whole v3 class-2 header naming this key's version and
	// algorithm, the common case.
	if k.heads(ciphertext) {
		return k.openV3(dst, ciphertext, ad)
	}
	if err := sk.names(ciphertext, version3); err != nil {
		return dst, err
	}
	return dst, fmt.Errorf("%w: the header does not parse as this key's", ErrMalformed)
}

// Destroy zeroes the key's material. The AEAD built from it keeps its own
// expanded key schedule, which Go cannot zero; drop every reference to the
// SubjectKey after destroying it. A destroyed key must not be used.
func (sk *SubjectKey) Destroy() { clear(sk.k.material) }

// IsSubjectSealed reports, from its first two bytes, whether a binary
// ciphertext names a subject key (class 2 of v3): a cheap test before
// SubjectKeyVersion, which also validates the header.
func IsSubjectSealed(ciphertext []byte) bool {
	return len(ciphertext) >= 2 && (ciphertext[0] == version3 || ciphertext[0] == version4) && ciphertext[1] == byte(classSubject)
}

// SubjectKeyVersion reports whether a binary ciphertext names a subject
// key (class 2), and which version. It reads the header's first bytes
// only; opening validates the rest.
func SubjectKeyVersion(ciphertext []byte) (version uint32, ok bool) {
	if !IsSubjectSealed(ciphertext) || len(ciphertext) < headerSize {
		return 0, false
	}
	return binary.BigEndian.Uint32(ciphertext[3:7]), true
}

// Wrapped subject keys: the payload sealed under a keyring key (or, for
// user-held keys, another wrapping key) is
//
//	0x01 | algorithm (1) | version (4, big-endian) | material
//
// and the wrapping context is subjectWrapDomain followed by the caller's
// context (which names the subject and the version; see FORMAT.md).
const (
	subjectPayloadVersion = 0x01
	subjectPayloadHeader  = 6
	subjectWrapDomain     = "ward subject key v1\x00"
)

// WrapSubjectKey seals sk under the keyring's primary key, bound to
// ad (the field layer binds the subject's namespace, ID and the
// key's version). The result is a class-1 v3 ciphertext, so it rotates,
// re-wraps and is censused like any value under a keyring key.
func (kr *Keyring) WrapSubjectKey(sk *SubjectKey, ad []byte) ([]byte, error) {
	payload := sk.payload()
	defer clear(payload)
	return kr.Seal(payload, subjectWrapContext(ad))
}

// UnwrapSubjectKey opens a subject key wrapped by [Keyring.WrapSubjectKey]
// for the same ad. Errors are those of [Keyring.Open], or
// [ErrMalformed] for a payload that is not a subject key.
func (kr *Keyring) UnwrapSubjectKey(wrapped, ad []byte) (*SubjectKey, error) {
	payload, err := kr.Open(wrapped, subjectWrapContext(ad))
	if err != nil {
		return nil, err
	}
	defer clear(payload)
	return parseSubjectPayload(payload)
}

func subjectWrapContext(ad []byte) []byte {
	return append([]byte(subjectWrapDomain), ad...)
}

func (sk *SubjectKey) payload() []byte {
	p := make([]byte, subjectPayloadHeader, subjectPayloadHeader+len(sk.k.material))
	p[0] = subjectPayloadVersion
	p[1] = byte(sk.k.Algorithm)
	binary.BigEndian.PutUint32(p[2:6], sk.Version())
	return append(p, sk.k.material...)
}

// parseSubjectPayload parses an unwrapped payload; it copies the material.
func parseSubjectPayload(p []byte) (*SubjectKey, error) {
	if len(p) < subjectPayloadHeader {
		return nil, fmt.Errorf("%w: subject key payload truncated", ErrMalformed)
	}
	if p[0] != subjectPayloadVersion {
		return nil, &VersionError{What: "subject key payload", Version: fmt.Sprintf("0x%x", p[0])}
	}
	alg := Algorithm(p[1])
	if !alg.valid() || len(p) != subjectPayloadHeader+alg.KeySize() {
		return nil, fmt.Errorf("%w: subject key payload of the wrong size or algorithm", ErrMalformed)
	}
	version := binary.BigEndian.Uint32(p[2:6])
	if version == 0 {
		return nil, fmt.Errorf("%w: subject key version 0", ErrMalformed)
	}
	return newSubjectKey(alg, version, append([]byte(nil), p[subjectPayloadHeader:]...))
}

// WrapSubjectKeyWith seals sk under a caller's AEAD key (user-held keys:
// a key derived from the user's password), bound to ad, as a class-2
// v3 ciphertext that names kek's version. kek must be used only for
// wrapping.
func WrapSubjectKeyWith(kek *SubjectKey, sk *SubjectKey, ad []byte) []byte {
	payload := sk.payload()
	defer clear(payload)
	return kek.AppendSeal(nil, payload, subjectWrapContext(ad))
}

// UnwrapSubjectKeyWith opens a subject key wrapped by
// WrapSubjectKeyWith under the same kek and ad.
func UnwrapSubjectKeyWith(kek *SubjectKey, wrapped, ad []byte) (*SubjectKey, error) {
	payload, err := kek.AppendOpen(nil, wrapped, subjectWrapContext(ad))
	if err != nil {
		return nil, err
	}
	defer clear(payload)
	return parseSubjectPayload(payload)
}

// SubjectKeyFromSecret builds a subject key of the given algorithm and
// version from secret material the caller derived (for example a
// key-encryption key derived from a password hash's output). secret must be
// exactly the algorithm's key size; it is copied.
func SubjectKeyFromSecret(alg Algorithm, version uint32, secret []byte) (*SubjectKey, error) {
	if !alg.valid() || len(secret) != alg.KeySize() {
		return nil, fmt.Errorf("keyring: a %v key needs %d bytes of secret", alg, alg.KeySize())
	}
	if version == 0 {
		return nil, errors.New("keyring: subject key version 0 is not a version")
	}
	return newSubjectKey(alg, version, append([]byte(nil), secret...))
}

// DeriveScope returns K_scope of this subject key for scope (FORMAT.md,
// ciphertext v4): the key its v4 values of that scope are sealed under,
// and nothing else. It is secret. It exists to hand one scope of one
// subject's values to a reader (a worker process) that must open no other
// column and no other subject's values; see field.Column.SubjectGrant.
func (sk *SubjectKey) DeriveScope(scope string) ([]byte, error) {
	if sk.fixed {
		return nil, ErrNotGranted
	}
	if sk.k.refused {
		return nil, ErrNotApproved
	}
	return hkdfScope(sk.k.material, scope, sk.k.Algorithm.KeySize())
}
