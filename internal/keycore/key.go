package keycore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
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
		return 0, fmt.Errorf("keyring: invalid key ID %q of %d bytes (want 8 hex digits)", excerpt(s), len(s))
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
	return StateUnknown, fmt.Errorf("keyring: unknown key state %q", excerpt(s))
}

// excerpt is what an error quotes of a string that may be anybody's (a
// database or keyring-file writer's): at most its first 16 bytes, since
// errors reach logs.
func excerpt(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
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
	// checkBlock (AES-GCM keys) or checkAEAD (XChaCha20-Poly1305 keys)
	// keys the context check of v3 ciphertexts under a key derived from
	// the material (see checkV3).
	checkBlock cipher.Block
	checkAEAD  cipher.AEAD
	// check keys the context check of v2 ciphertexts (read only):
	// HMAC-SHA-256 under a key derived from the material (see
	// contextCheckV2), built on first use.
	check *sync.Pool // of *checker
	// ns is the algorithm's nonce size; head is the first 7 bytes of the
	// v3 header of a value of class (key class, algorithm, key ID),
	// big-endian in the top 56 bits, so that the fast paths of sealing
	// and opening write and compare them as one word.
	ns   int
	head uint64
	// random: aead draws its own nonces (the FIPS 140-3 mode), so it
	// opens with the nonce at the front of its input and never seals.
	random bool
	// refused: the algorithm is not approved in the FIPS 140-3 mode; the
	// key has no AEAD and every use fails with ErrNotApproved.
	refused bool
	// uses counts the key's seals (usage.go): its keyring's counter, set
	// when the key is published; nil for a subject's key.
	uses *usage
}

// setClass records which key class k seals as (a keyring key, or a
// subject's own key): the header bytes that follow from it.
func (k *key) setClass(class keyClass) {
	k.head = uint64(version3)<<56 | uint64(class)<<48 | uint64(k.Algorithm)<<40 | uint64(uint32(k.ID))<<8
}

// HKDF infos of a key's context-check keys.
const (
	checkInfoV2 = "ward ciphertext v2 context check"
	checkInfoV3 = "ward ciphertext v3 context check"
)

func newKey(info KeyInfo, material []byte) (*key, error) {
	if info.Algorithm == XChaCha20Poly1305 && fipsOn() {
		// Kept, so that the keyring loads, but refused on every use.
		return &key{KeyInfo: info, material: material, ns: info.Algorithm.NonceSize(), refused: true}, nil
	}
	a, err := info.Algorithm.newAEAD(material)
	if err != nil {
		return nil, err
	}
	ck3, err := hkdf.Key(sha256.New, material, nil, checkInfoV3, info.Algorithm.KeySize())
	if err != nil {
		return nil, err
	}
	k := &key{KeyInfo: info, material: material, aead: a, ns: info.Algorithm.NonceSize(), random: a.NonceSize() == 0}
	k.setClass(classKeyring)
	if info.Algorithm == XChaCha20Poly1305 {
		k.checkAEAD, err = chacha20poly1305.NewX(ck3)
	} else {
		k.checkBlock, err = aes.NewCipher(ck3)
	}
	clear(ck3)
	if err != nil {
		return nil, err
	}
	pool := &sync.Pool{New: func() any {
		ck, err := hkdf.Key(sha256.New, material, nil, checkInfoV2, 32)
		if err != nil {
			panic("keyring: HKDF of a valid key failed: " + err.Error())
		}
		return &checker{mac: hmac.New(sha256.New, ck)}
	}}
	k.check = pool
	return k, nil
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
