package keyring

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// KeyID is the public 32-bit identifier of a key. It is written in every
// ciphertext and printed as eight hex digits.
type KeyID uint32

// String returns the ID as eight lower-case hex digits.
func (id KeyID) String() string { return fmt.Sprintf("%08x", uint32(id)) }

// ParseKeyID parses eight (or fewer) hex digits as printed by
// [KeyID.String]; a "0x" prefix is accepted.
func ParseKeyID(s string) (KeyID, error) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("keyring: invalid key ID %q (want 8 hex digits)", s)
	}
	return KeyID(v), nil
}

// State is the lifecycle state of a key. The zero value is invalid.
type State uint8

const (
	// StateUnknown is the invalid zero value.
	StateUnknown State = 0
	// Primary keys seal new values and open old ones. A keyring has
	// exactly one.
	Primary State = 1
	// DecryptOnly keys open existing values but never seal new ones: the
	// state of a key after rotation, or of a new key not yet promoted.
	DecryptOnly State = 2
	// Disabled keys neither seal nor open. Their material is kept so the key
	// can be enabled again.
	Disabled State = 3
)

var stateNames = map[State]string{Primary: "primary", DecryptOnly: "decrypt-only", Disabled: "disabled"}

// String returns "primary", "decrypt-only" or "disabled".
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

func parseState(s string) (State, error) {
	for st, n := range stateNames {
		if n == s {
			return st, nil
		}
	}
	return StateUnknown, fmt.Errorf("keyring: unknown key state %q", s)
}

// KeyInfo is the public description of a key: everything but its material.
type KeyInfo struct {
	ID        KeyID
	Algorithm Algorithm
	State     State
	Created   time.Time
}

// key is a keyring entry. Its material never leaves the package except
// through sealed storage.
type key struct {
	KeyInfo
	material []byte
	aead     cipher.AEAD
	// check keys the context check of v2 ciphertexts: HMAC-SHA-256 under
	// a key derived from the material (see contextCheckV2).
	check *sync.Pool // of *checker
}

// checkInfo is the HKDF info of a key's context-check key.
const checkInfo = "ward ciphertext v2 context check"

func newKey(info KeyInfo, material []byte) (*key, error) {
	a, err := info.Algorithm.newAEAD(material)
	if err != nil {
		return nil, err
	}
	ck, err := hkdf.Key(sha256.New, material, nil, checkInfo, 32)
	if err != nil {
		return nil, err
	}
	pool := &sync.Pool{New: func() any { return &checker{mac: hmac.New(sha256.New, ck)} }}
	return &key{KeyInfo: info, material: material, aead: a, check: pool}, nil
}

// withState returns a copy of k in another state, sharing its material.
func (k *key) withState(st State) *key {
	nk := *k
	nk.State = st
	return &nk
}

// String redacts the material so that a key printed by mistake reveals only
// its public fields.
func (k *key) String() string {
	return fmt.Sprintf("key{id=%v alg=%v state=%v material=REDACTED}", k.ID, k.Algorithm, k.State)
}

// GoString redacts like String.
func (k *key) GoString() string { return k.String() }

// Format redacts like String, whatever the verb.
func (k *key) Format(f fmt.State, _ rune) { f.Write([]byte(k.String())) }
