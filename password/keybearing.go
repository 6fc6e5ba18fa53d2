package password

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
)

// KeyBearingID is the PHC identifier of a key-bearing hash:
//
//	$ward-argon2id-kek$v=19$m=…,t=…,p=…[,keyid=…]$salt$verifier
//
// It is Argon2id (RFC 9106) with a 64-byte tag computed in one call: the
// first 32 bytes are the stored verifier, the last 32 a secret that
// [Hasher.HashWithKey] and [Hasher.VerifyWithKey] return and nothing
// stores. An application derives from the secret the key that wraps a
// user's own data key (keys per user, field/subject): log-in verifies the
// password and unlocks the user's data with one Argon2 call. The two
// halves of one Argon2 output are independent to anyone who does not know
// the password (Argon2's final step is a BLAKE2b-based variable-length
// hash), so the verifier reveals nothing about the secret; both fall to
// the same offline guessing, at one Argon2 call per guess.
const KeyBearingID = "ward-argon2id-kek"

// KeyBearingPBKDF2ID is the PHC identifier of a key-bearing hash from an
// approved derivation, the one the FIPS 140-3 mode writes:
//
//	$ward-pbkdf2-sha256-kek$i=…,l=32[,keyid=…]$salt$verifier
//
// M = PBKDF2-HMAC-SHA-256(password, salt, i, 32) is computed once; the
// stored verifier is HKDF-SHA-256-Expand(M, "ward pbkdf2 kek verifier v1",
// 32) and the secret HKDF-SHA-256-Expand(M, "ward pbkdf2 kek secret v1",
// 32). Each guess costs an attacker the whole PBKDF2, as it costs log-in.
const KeyBearingPBKDF2ID = "ward-pbkdf2-sha256-kek"

// HKDF infos of the PBKDF2 key-bearing hash's halves.
const (
	pbkdf2KEKVerifier = "ward pbkdf2 kek verifier v1"
	pbkdf2KEKSecret   = "ward pbkdf2 kek secret v1"
)

const keyBearingHalf = 32

// SecretSize is the size of the secret a key-bearing hash yields.
const SecretSize = keyBearingHalf

// ErrNotKeyBearing means VerifyWithKey verified a hash that yields no
// secret (any format but [KeyBearingID]): the password matched, and the
// caller should re-hash with [Hasher.HashWithKey] to get one.
var ErrNotKeyBearing = errors.New("password: the hash is not key-bearing")

// HashWithKey returns a key-bearing hash of password ([KeyBearingID]) under
// the preferred Argon2id parameters and pepper, and the 32-byte secret the
// same Argon2 call produced. The caller derives keys from the secret and
// clears it; the secret is never stored. The policy's preferred scheme must
// be Argon2id.
func (h *Hasher) HashWithKey(ctx context.Context, password []byte) (encoded string, secret []byte, err error) {
	if err := h.checkPassword(password); err != nil {
		return "", nil, err
	}
	p := h.policy.Preferred
	if p.Scheme != Argon2id && p.Scheme != PBKDF2SHA256 {
		return "", nil, fmt.Errorf("%w: key-bearing hashes are Argon2id or PBKDF2-SHA-256, the policy prefers %v", ErrUnsupportedScheme, p.Scheme)
	}
	d := &decoded{params: p, salt: make([]byte, p.SaltLen), kek: true}
	rand.Read(d.salt)
	pw := password
	if h.policy.Pepper != nil {
		d.pepper = h.policy.Pepper.Primary().ID
		if pw, err = h.pepper(d.pepper, password); err != nil {
			return "", nil, err
		}
		defer clear(pw)
	}
	out, err := h.runKeyBearing(ctx, d, pw)
	if err != nil {
		return "", nil, err
	}
	d.hash = slices.Clone(out[:keyBearingHalf])
	secret = slices.Clone(out[keyBearingHalf:])
	clear(out)
	d.params.KeyLen = keyBearingHalf
	return encodePHC(d), secret, nil
}

// VerifyWithKey verifies password against a stored hash like
// [Hasher.Verify] and, for a key-bearing hash, returns its secret (the
// caller clears it). For any other format that matches, it returns
// [ErrNotKeyBearing] with a nil secret: re-hash with HashWithKey.
func (h *Hasher) VerifyWithKey(ctx context.Context, password []byte, encoded string) (secret []byte, res Result, err error) {
	if err := h.checkPassword(password); err != nil {
		return nil, Result{}, err
	}
	d, err := decode(encoded, h.limits)
	if err != nil {
		return nil, Result{}, err
	}
	if !d.kek {
		res, err = h.Verify(ctx, password, encoded)
		if err == nil {
			err = ErrNotKeyBearing
		}
		return nil, res, err
	}
	res = Result{Params: d.params, Format: d.format}
	if h.policy.Accept != nil && !slices.Contains(h.policy.Accept, d.params.Scheme) {
		return nil, res, fmt.Errorf("%w: %v is not accepted by the policy", ErrUnsupportedScheme, d.params.Scheme)
	}
	pw, err := h.verifyInput(d, password)
	if err != nil {
		return nil, res, err
	}
	defer clear(pw)
	if secret, err = h.checkKeyBearing(ctx, d, pw); err != nil {
		return nil, res, err
	}
	res.NeedsRehash = d.params.Scheme != h.policy.Preferred.Scheme || d.params.weakerThan(h.policy.Preferred) ||
		(h.policy.Pepper != nil && d.pepper != h.policy.Pepper.Primary().ID)
	return secret, res, nil
}

// checkKeyBearing recomputes a key-bearing hash, compares its verifier in
// constant time, and returns the secret half, or ErrMismatch.
func (h *Hasher) checkKeyBearing(ctx context.Context, d *decoded, pw []byte) ([]byte, error) {
	out, err := h.runKeyBearing(ctx, d, pw)
	if err != nil {
		return nil, err
	}
	defer clear(out)
	if subtle.ConstantTimeCompare(out[:keyBearingHalf], d.hash) != 1 {
		return nil, ErrMismatch
	}
	return slices.Clone(out[keyBearingHalf:]), nil
}

// runKeyBearing computes the 64 bytes of a key-bearing hash: verifier,
// then secret (the Argon2id tag, or PBKDF2's two HKDF expansions).
func (h *Hasher) runKeyBearing(ctx context.Context, d *decoded, pw []byte) ([]byte, error) {
	if d.params.Scheme == PBKDF2SHA256 {
		return h.runKeyBearingPBKDF2(ctx, d, pw)
	}
	full := *d
	full.params.KeyLen = 2 * keyBearingHalf
	out, err := h.run(ctx, &full, pw)
	if err != nil {
		return nil, err
	}
	if len(out) != 2*keyBearingHalf {
		clear(out)
		return nil, fmt.Errorf("password: Argon2 returned %d bytes, want %d", len(out), 2*keyBearingHalf)
	}
	return out, nil
}

// ignoreMismatch turns ErrMismatch into no error, for check's bool result.
func ignoreMismatch(err error) error {
	if errors.Is(err, ErrMismatch) {
		return nil
	}
	return err
}

// runKeyBearingPBKDF2 is runKeyBearing for [KeyBearingPBKDF2ID].
func (h *Hasher) runKeyBearingPBKDF2(ctx context.Context, d *decoded, pw []byte) ([]byte, error) {
	one := *d
	one.params.KeyLen = keyBearingHalf
	m, err := h.run(ctx, &one, pw)
	if err != nil {
		return nil, err
	}
	defer clear(m)
	v, err := hkdf.Expand(sha256.New, m, pbkdf2KEKVerifier, keyBearingHalf)
	if err != nil {
		return nil, fmt.Errorf("password: %w", err)
	}
	s, err := hkdf.Expand(sha256.New, m, pbkdf2KEKSecret, keyBearingHalf)
	if err != nil {
		clear(v)
		return nil, fmt.Errorf("password: %w", err)
	}
	out := append(v, s...)
	clear(s)
	return out, nil
}
