package keyring

import (
	"fmt"

	"github.com/wardlab/ward/internal/keycore"
)

// A SubjectKey is a subject's own data key (a user's, a tenant's): key
// class 2 of ciphertext v3 and v4. Values sealed under it name its version
// in their header, not a keyring key; the subject they belong to is bound
// through their context. A subject key is stored only wrapped — by the
// keyring ([Keyring.WrapSubjectKey]), so that keyring rotation and the
// master key or KMS that guards the keyring file still apply — and
// deleting every wrapped copy erases what it sealed. Package
// field/subject keeps them in a database.
//
// Printing a SubjectKey shows its version and algorithm, never material.
type SubjectKey keycore.SubjectKey

func (sk *SubjectKey) core() *keycore.SubjectKey { return (*keycore.SubjectKey)(sk) }

// NewSubjectKey returns a fresh random subject key of the given algorithm
// and version. Versions start anywhere (the field layer starts a subject at
// a random version, so that a key re-created after a deletion never has the
// version its older values name) and grow by one with each rotation; 0 is
// not a version.
func NewSubjectKey(alg Algorithm, version uint32) (*SubjectKey, error) {
	sk, err := keycore.NewSubjectKey(alg, version)
	if err != nil {
		return nil, err
	}
	return (*SubjectKey)(sk), nil
}

// Version returns the key's version, the number the header of each value
// sealed under it carries.
func (sk *SubjectKey) Version() uint32 { return sk.core().Version() }

// Algorithm returns the key's AEAD algorithm.
func (sk *SubjectKey) Algorithm() Algorithm { return sk.core().Algorithm() }

// String redacts the material.
func (sk *SubjectKey) String() string { return sk.core().String() }

// GoString redacts like String.
func (sk *SubjectKey) GoString() string { return sk.core().String() }

// Format redacts like String, whatever the verb.
func (sk *SubjectKey) Format(f fmt.State, _ rune) { f.Write([]byte(sk.String())) }

// AppendSeal seals plaintext as a class-2 v3 ciphertext (in the FIPS 140-3
// mode, v4 of the empty scope) bound to ad and appends it to dst. In
// that mode it panics for a key of an algorithm the mode refuses, which
// only unwrapping a stored key can give ([NewSubjectKey] refuses them).
func (sk *SubjectKey) AppendSeal(dst, plaintext, ad []byte) []byte {
	return sk.core().AppendSeal(dst, plaintext, ad)
}

// AppendOpen opens a class-2 ciphertext sealed under this key for ad
// and appends the plaintext to dst. A value of another class, or of
// another version, is refused without decrypting; on error dst is
// returned unchanged.
func (sk *SubjectKey) AppendOpen(dst, ciphertext, ad []byte) ([]byte, error) {
	return sk.core().AppendOpen(dst, ciphertext, ad)
}

// DeriveScope returns K_scope of this subject key for scope (FORMAT.md,
// ciphertext v4): the key its v4 values of that scope are sealed under,
// and nothing else. It is secret. It exists to hand one scope of one
// subject's values to a reader (a worker process) that must open no other
// column and no other subject's values; see field.Column.SubjectGrant.
func (sk *SubjectKey) DeriveScope(scope string) ([]byte, error) { return sk.core().DeriveScope(scope) }

// Destroy zeroes the key's material. The AEAD built from it keeps its own
// expanded key schedule, which Go cannot zero; drop every reference to the
// SubjectKey after destroying it. A destroyed key must not be used.
func (sk *SubjectKey) Destroy() { sk.core().Destroy() }
