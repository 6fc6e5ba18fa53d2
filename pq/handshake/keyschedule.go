package handshake

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
)

// keySchedule derives the finished keys and the session key from the
// shared secrets (ML-KEM's first, then X25519's, as TLS's X25519MLKEM768
// orders them). The concatenation is safe because the transcript, which
// binds both public shares and the ciphertext, enters every derivation.
type keySchedule struct{ prk []byte }

const scheduleSalt = "ward-handshake-v1"

// newKeySchedule consumes the shared secrets: they are zeroed.
func newKeySchedule(secrets ...[]byte) (*keySchedule, error) {
	var ikm []byte
	for _, s := range secrets {
		ikm = append(ikm, s...)
		clear(s)
	}
	defer clear(ikm)
	prk, err := hkdf.Extract(sha256.New, ikm, []byte(scheduleSalt))
	if err != nil {
		return nil, err
	}
	return &keySchedule{prk: prk}, nil
}

func (k *keySchedule) finished(label string, transcript []byte) []byte {
	fk, _ := hkdf.Expand(sha256.New, k.prk, label, 32)
	m := hmac.New(sha256.New, fk)
	m.Write(transcript)
	clear(fk)
	return m.Sum(nil)
}

func (k *keySchedule) session(transcript []byte) (out [32]byte) {
	key, _ := hkdf.Expand(sha256.New, k.prk, "session key\x00"+string(transcript), 32)
	copy(out[:], key)
	clear(key)
	clear(k.prk)
	return out
}
