// Package keyhooks carries the parts of package keyring's protocol that
// only ward's own packages use (state MACs and anchors for the ledger,
// subject-key wrapping for field/subject, header parsing for the field
// layer) from keyring to internal/keyproto, without making them keyring's
// API. Package keyring sets every variable in its init; nothing else may.
// Callers use internal/keyproto, whose functions are typed.
package keyhooks

// HeaderSize is the size of a v3 ciphertext header, before the nonce: the
// room the field layer leaves at the front of a value's associated data.
const HeaderSize = 11

// The keyring's hooks. The first argument of each *Keyring hook is a
// *keyring.Keyring, of each *SubjectKey hook a *keyring.SubjectKey.
var (
	StateMAC       func(kr any, msg []byte) (epoch uint64, mac []byte)
	VerifyStateMAC func(kr any, epoch uint64, msg, mac []byte) error
	StateEpoch     func(kr any) uint64
	Anchor         func(kr any, database string) (anchor any, ok bool)
	Anchored       func(kr any) []string
	SetAnchor      func(kr any, ctx any, database string, anchor any) error

	KeyIDOf           func(ciphertext []byte) (id uint32, err error)
	IsSubjectSealed   func(ciphertext []byte) bool
	SubjectKeyVersion func(ciphertext []byte) (version uint32, ok bool)

	WrapSubjectKeyWith   func(kek, sk any, context []byte) []byte
	UnwrapSubjectKeyWith func(kek any, wrapped, context []byte) (sk any, err error)
	SubjectKeyFromSecret func(alg uint8, version uint32, secret []byte) (sk any, err error)
)
