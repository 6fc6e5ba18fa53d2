// Package password hashes and verifies passwords: Argon2id by default
// (RFC 9106, PHC string format), with bcrypt, scrypt and PBKDF2 for
// migration, in the spirit of Spring Security's PasswordEncoder.
//
// Most users should create one [Hasher] with the default [Policy] and call
// [Hasher.Hash] at sign-up and [Hasher.VerifyAndUpgrade] at log-in, storing
// the upgraded hash it returns with a compare-and-swap:
//
//	UPDATE users SET pw = $new WHERE id = $id AND pw = $old
//
// Verify accepts hashes written by libsodium, the reference argon2 CLI,
// Spring Security (including DelegatingPasswordEncoder's {id} prefixes),
// passlib, Django and the Rust argon2 crate. A stored hash is input: its
// parameters are checked against hard [Limits] before any work, and every
// hash runs through a [Limiter] that bounds concurrency and memory.
package password

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"
	"unicode/utf8"

	"crypto/pbkdf2"

	xargon2 "github.com/go-crypt/x/argon2"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/scrypt"

	"github.com/wardlab/ward/keyring"
)

// bcryptMaxPassword is where bcrypt silently truncates.
const bcryptMaxPassword = 72

// Policy says what Hash writes, what Verify accepts and the hard limits.
type Policy struct {
	// Preferred are the parameters Hash writes (default OWASP: Argon2id
	// m=19456 KiB, t=2, p=1). Stored hashes weaker than this, or of
	// another scheme, need a rehash.
	Preferred Params
	// Accept lists the schemes Verify accepts (default: all of them).
	Accept []Scheme
	// Limits caps the parameters of stored hashes (zero fields: DefaultLimits).
	Limits Limits
	// AllowWeak lets Hash write parameters below OWASP's minimums. Only
	// for tests and legacy interoperability.
	AllowWeak bool
	// AllowEmpty accepts the empty password. By default Hash and Verify
	// refuse it with ErrEmptyPassword.
	AllowEmpty bool
	// BcryptTruncate verifies passwords longer than 72 bytes against
	// bcrypt hashes by truncating them, as most bcrypt implementations did
	// silently. By default they are refused with ErrPasswordTooLong.
	BcryptTruncate bool
	// Pepper, if set, mixes a secret from the keyring into every new hash:
	// HMAC-SHA-256 under a key derived from the keyring's primary key,
	// whose ID is recorded in the hash (keyid=) so the pepper can rotate.
	// Bcrypt hashes cannot record it and cannot be peppered.
	Pepper *keyring.Keyring
}

// Result is what Verify learned besides the match.
type Result struct {
	// Params are the stored hash's scheme and parameters.
	Params Params
	// Format names the encoding: phc, bcrypt, passlib, django, spring-…
	Format string
	// NeedsRehash is true when the hash is weaker than the policy's
	// preferred parameters, of another scheme, or under an old pepper.
	NeedsRehash bool
}

// Hasher hashes and verifies passwords under a Policy. It is safe for
// concurrent use.
type Hasher struct {
	policy  Policy
	limits  Limits
	limiter *Limiter
}

// NewHasher returns a Hasher. A nil limiter gets a default one (one hash
// per CPU, 256 MiB); share one Limiter between Hashers in one process.
func NewHasher(p Policy, limiter *Limiter) (*Hasher, error) {
	if p.Preferred.Scheme == SchemeUnknown {
		p.Preferred = OWASP
	}
	if p.Preferred.SaltLen == 0 {
		p.Preferred.SaltLen = 16
	}
	if p.Preferred.KeyLen == 0 {
		p.Preferred.KeyLen = 32
	}
	if p.Preferred.Scheme == Bcrypt {
		p.Preferred.SaltLen, p.Preferred.KeyLen = 16, 23
	}
	if !p.AllowWeak {
		if err := p.Preferred.checkStrength(); err != nil {
			return nil, err
		}
	} else if p.Preferred.Scheme != Argon2id && p.Preferred.Scheme != Argon2i && p.Preferred.Scheme != Bcrypt &&
		p.Preferred.Scheme != Scrypt && p.Preferred.Scheme != PBKDF2SHA256 {
		return nil, fmt.Errorf("%w: %v is accepted for verification only", ErrUnsupportedScheme, p.Preferred.Scheme)
	}
	if p.Pepper != nil && p.Preferred.Scheme == Bcrypt {
		return nil, errors.New("password: bcrypt hashes cannot record a pepper key; prefer Argon2id")
	}
	h := &Hasher{policy: p, limits: p.Limits.withDefaults(), limiter: limiter}
	if err := h.limits.check(p.Preferred); err != nil {
		return nil, fmt.Errorf("password: preferred parameters exceed the limits: %w", err)
	}
	if h.limiter == nil {
		h.limiter = NewLimiter(LimiterConfig{})
	}
	return h, nil
}

// Policy returns the hasher's policy.
func (h *Hasher) Policy() Policy { return h.policy }

// Limiter returns the hasher's limiter.
func (h *Hasher) Limiter() *Limiter { return h.limiter }

func (h *Hasher) checkPassword(pw []byte) error {
	if len(pw) == 0 && !h.policy.AllowEmpty {
		return ErrEmptyPassword
	}
	if len(pw) > h.limits.MaxPasswordLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrPasswordTooLong, len(pw), h.limits.MaxPasswordLen)
	}
	return nil
}

// Hash returns the encoded hash of password under the preferred
// parameters, with a fresh random salt.
func (h *Hasher) Hash(ctx context.Context, password []byte) (string, error) {
	if err := h.checkPassword(password); err != nil {
		return "", err
	}
	p := h.policy.Preferred
	if p.Scheme == Bcrypt && len(password) > bcryptMaxPassword {
		return "", fmt.Errorf("%w: bcrypt uses only the first 72 bytes", ErrPasswordTooLong)
	}
	d := &decoded{params: p, salt: make([]byte, p.SaltLen)}
	rand.Read(d.salt)
	pw := password
	if h.policy.Pepper != nil {
		d.pepper = h.policy.Pepper.Primary().ID
		var err error
		if pw, err = h.pepper(d.pepper, password); err != nil {
			return "", err
		}
		defer clear(pw)
	}
	release, err := h.limiter.Acquire(ctx, p.MemoryBytes())
	if err != nil {
		return "", err
	}
	defer release()
	if p.Scheme == Bcrypt {
		b, err := bcrypt.GenerateFromPassword(pw, p.Cost)
		if err != nil {
			return "", fmt.Errorf("password: bcrypt: %w", err)
		}
		return string(b), nil
	}
	out, err := compute(d, pw)
	if err != nil {
		return "", err
	}
	d.hash = out
	return encodePHC(d), nil
}

// Verify checks password against an encoded hash. It returns
// ErrMismatch when the password is wrong, and another error when the hash
// cannot be checked (malformed, unsupported, over the limits, busy).
// Comparisons are constant-time, and a parsed hash is always computed in
// full, so the time taken does not depend on which byte differs.
func (h *Hasher) Verify(ctx context.Context, password []byte, encoded string) (Result, error) {
	if err := h.checkPassword(password); err != nil {
		return Result{}, err
	}
	d, err := decode(encoded, h.limits)
	if err != nil {
		return Result{}, err
	}
	res := Result{Params: d.params, Format: d.format}
	if h.policy.Accept != nil && !slices.Contains(h.policy.Accept, d.params.Scheme) {
		return res, fmt.Errorf("%w: %v is not accepted by the policy", ErrUnsupportedScheme, d.params.Scheme)
	}
	pw := password
	if d.prehash != nil {
		pw = d.prehash(pw)
		defer clear(pw)
	}
	if d.pepper != 0 {
		if h.policy.Pepper == nil {
			return res, fmt.Errorf("%w: the hash is peppered with key %v and the policy has no pepper keyring", ErrPepper, d.pepper)
		}
		if pw, err = h.pepper(d.pepper, pw); err != nil {
			return res, err
		}
		defer clear(pw)
	}
	if d.params.Scheme == Bcrypt && len(pw) > bcryptMaxPassword {
		if !h.policy.BcryptTruncate {
			return res, fmt.Errorf("%w: bcrypt would use only the first 72 of %d bytes (set Policy.BcryptTruncate for legacy hashes)", ErrPasswordTooLong, len(pw))
		}
		pw = pw[:bcryptMaxPassword]
	}
	release, err := h.limiter.Acquire(ctx, d.params.MemoryBytes())
	if err != nil {
		return res, err
	}
	match, err := check(d, pw)
	release()
	if err != nil {
		return res, err
	}
	if !match {
		return res, ErrMismatch
	}
	res.NeedsRehash = d.params.weakerThan(h.policy.Preferred) ||
		(h.policy.Pepper != nil && d.pepper != h.policy.Pepper.Primary().ID)
	return res, nil
}

// VerifyAndUpgrade verifies password and, if the stored hash needs a
// rehash under the policy, returns a new hash to store (otherwise "").
// Store it with a compare-and-swap on the old hash, so that a concurrent
// password change is never overwritten.
func (h *Hasher) VerifyAndUpgrade(ctx context.Context, password []byte, encoded string) (upgraded string, res Result, err error) {
	res, err = h.Verify(ctx, password, encoded)
	if err != nil || !res.NeedsRehash {
		return "", res, err
	}
	upgraded, err = h.Hash(ctx, password)
	return upgraded, res, err
}

// pepper returns base64(HMAC-SHA-256(K, password)) with K derived from the
// keyring key id. The base64 keeps the input printable for every scheme.
func (h *Hasher) pepper(id keyring.KeyID, pw []byte) ([]byte, error) {
	k, err := h.policy.Pepper.DeriveFromKey(id, "password-pepper", 32)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPepper, err)
	}
	defer clear(k)
	m := hmac.New(sha256.New, k)
	m.Write(pw)
	sum := m.Sum(nil)
	defer clear(sum)
	return base64.RawStdEncoding.AppendEncode(nil, sum), nil
}

// check recomputes the hash and compares in constant time.
func check(d *decoded, pw []byte) (bool, error) {
	if d.params.Scheme == Bcrypt {
		err := bcrypt.CompareHashAndPassword(d.bcrypt, pw)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
			return false, nil
		}
		return false, &ParseError{"bcrypt", err.Error()}
	}
	out, err := compute(d, pw)
	if err != nil {
		return false, err
	}
	defer clear(out)
	return subtle.ConstantTimeCompare(out, d.hash) == 1, nil
}

// compute runs the scheme's primitive: x/crypto for Argon2i/Argon2id and
// scrypt, crypto/pbkdf2, and go-crypt/x for Argon2d (which x/crypto
// lacks).
func compute(d *decoded, pw []byte) ([]byte, error) {
	p := d.params
	salt := d.salt
	if d.saltSuffix != nil {
		salt = append(slices.Clone(salt), d.saltSuffix...)
	}
	switch p.Scheme {
	case Argon2id:
		return argon2.IDKey(pw, salt, p.Time, p.Memory, p.Parallelism, uint32(p.KeyLen)), nil
	case Argon2i:
		return argon2.Key(pw, salt, p.Time, p.Memory, p.Parallelism, uint32(p.KeyLen)), nil
	case Argon2d:
		return xargon2.DKey(pw, salt, p.Time, p.Memory, uint32(p.Parallelism), uint32(p.KeyLen)), nil
	case Scrypt:
		out, err := scrypt.Key(pw, salt, 1<<p.LogN, p.R, p.P, p.KeyLen)
		if err != nil {
			return nil, &ParseError{"scrypt", err.Error()}
		}
		return out, nil
	case PBKDF2SHA256, PBKDF2SHA1, PBKDF2SHA512:
		if !utf8.Valid(pw) && d.format == "spring-pbkdf2" {
			return nil, &ParseError{"spring-pbkdf2", "Spring hashes UTF-16 characters; the password is not UTF-8"}
		}
		h := map[Scheme]func() hash.Hash{PBKDF2SHA256: sha256.New, PBKDF2SHA1: sha1.New, PBKDF2SHA512: sha512.New}[p.Scheme]
		out, err := pbkdf2.Key(h, string(pw), salt, p.Iterations, p.KeyLen)
		if err != nil {
			return nil, fmt.Errorf("password: pbkdf2: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedScheme, p.Scheme)
}

// encodePHC writes the PHC string of a computed hash.
func encodePHC(d *decoded) string {
	p := d.params
	var params string
	switch {
	case p.Scheme.isArgon2():
		params = fmt.Sprintf("v=19$m=%d,t=%d,p=%d", p.Memory, p.Time, p.Parallelism)
	case p.Scheme == Scrypt:
		params = fmt.Sprintf("ln=%d,r=%d,p=%d", p.LogN, p.R, p.P)
	case p.Scheme.isPBKDF2():
		params = fmt.Sprintf("i=%d,l=%d", p.Iterations, p.KeyLen)
	}
	if d.pepper != 0 {
		params += ",keyid=" + b64.EncodeToString(binary.BigEndian.AppendUint32(nil, uint32(d.pepper)))
	}
	return "$" + p.Scheme.String() + "$" + params + "$" + b64.EncodeToString(d.salt) + "$" + b64.EncodeToString(d.hash)
}
