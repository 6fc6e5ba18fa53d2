// Package password hashes and verifies passwords: Argon2id by default
// (RFC 9106, PHC string format), with bcrypt, scrypt and PBKDF2 for
// migration, in the spirit of Spring Security's PasswordEncoder. Argon2 is
// computed by ward's own core (AVX-512, AVX2 or portable Go, chosen at run
// time: see [Argon2Implementation]) in block memory that the [Limiter]
// keeps, zeroed, for the next hash.
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
	"crypto/fips140"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/observe"
	"github.com/wardlab/ward/password/internal/argon2"
)

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
	// RequirePepper makes Verify refuse hashes without a pepper with
	// ErrPepper: a database writer cannot then plant an unpeppered hash
	// of a password they know. Leave it off while legacy hashes remain.
	RequirePepper bool
	// Forms, if set, makes Hash write the preferred scheme, and the
	// pepper, only once every process of the fleet verifies them (package
	// forms: the hasher declares the schemes it accepts, and the pepper if
	// it has one, and asks for its preferred scheme and pepper to open).
	// Until then Hash writes Fallback, and a log-in upgrades nothing that
	// Fallback would not.
	Forms *fleetgate.Gate
	// Fallback are the parameters Hash writes while the preferred scheme
	// is not open: what the fleet's older processes write. Required with
	// Forms (for a change of pepper only, the preferred parameters).
	// Never peppered.
	Fallback Params
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
		p.Preferred = OWASP()
		if fips140.Enabled() {
			p.Preferred = PBKDF2SHA256OWASP()
		}
	}
	if err := approved(p.Preferred.Scheme); err != nil {
		return nil, err
	}
	if p.Forms != nil && p.Fallback.Scheme != SchemeUnknown {
		if err := approved(p.Fallback.Scheme); err != nil {
			return nil, err
		}
	}
	if p.Preferred.SaltLen == 0 {
		p.Preferred.SaltLen = 16
	}
	if p.Preferred.KeyLen == 0 {
		p.Preferred.KeyLen = 32
	}
	own, ownOK := ownFormatOf(p.Preferred.Scheme)
	if ownOK {
		p.Preferred.SaltLen, p.Preferred.KeyLen = own.lengths()
	}
	impl, err := schemeOf(p.Preferred.Scheme)
	if err != nil {
		return nil, err
	}
	if !p.AllowWeak {
		if err := p.Preferred.checkStrength(); err != nil {
			return nil, err
		}
	} else if !impl.writable() {
		return nil, fmt.Errorf("%w: %v is accepted for verification only", ErrUnsupportedScheme, p.Preferred.Scheme)
	}
	if p.RequirePepper && p.Pepper == nil {
		return nil, errors.New("password: RequirePepper needs a Pepper keyring")
	}
	if p.Pepper != nil && ownOK {
		return nil, fmt.Errorf("password: %s hashes cannot record a pepper key; prefer Argon2id", own.name())
	}
	h := &Hasher{policy: p, limits: p.Limits.withDefaults(), limiter: limiter}
	if err := h.declareForms(); err != nil {
		return nil, err
	}
	if err := impl.valid(p.Preferred); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWeakParams, err)
	}
	if err := h.limits.check(p.Preferred); err != nil {
		return nil, fmt.Errorf("password: preferred parameters exceed the limits: %w", err)
	}
	if h.limiter == nil {
		h.limiter = NewLimiter(LimiterConfig{})
	}
	return h, nil
}

// Argon2Implementation names the implementation of Argon2's compression
// function in use: "avx512", "avx2" or "generic".
func Argon2Implementation() string { return argon2.Impl() }

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
	p, peppered := h.target()
	own, ownOK := ownFormatOf(p.Scheme)
	if ownOK && len(password) > own.maxPassword() {
		return "", fmt.Errorf("%w: %s uses only the first %d bytes", ErrPasswordTooLong, own.name(), own.maxPassword())
	}
	d := &decoded{params: p, salt: make([]byte, p.SaltLen)}
	rand.Read(d.salt)
	pw := password
	if peppered {
		d.pepper = h.policy.Pepper.Primary().ID
		var err error
		if pw, err = h.pepper(d.pepper, password); err != nil {
			return "", err
		}
		defer clear(pw)
	}
	out, err := h.run(ctx, d, pw)
	if err != nil {
		return "", err
	}
	if ownOK {
		return string(out), nil
	}
	d.hash = out
	return encodePHC(d), nil
}

// run computes d's scheme on pw under the limiter, and reports it to the
// process's observer (package observe): a hash when d holds no hash yet,
// a verification otherwise.
func (h *Hasher) run(ctx context.Context, d *decoded, pw []byte) ([]byte, error) {
	impl, err := schemeOf(d.params.Scheme)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ev := observe.Hash{Op: "verify", Scheme: d.params.Scheme.String()}
	if d.hash == nil {
		ev.Op = "hash"
	}
	mem, cores := impl.cost(d.params)
	ls, err := h.limiter.acquire(ctx, mem, cores)
	if err != nil {
		if o := observe.Get(); o != nil && ctx.Err() == nil {
			ev.Rejected = true
			o.Hash(ev)
		}
		return nil, err
	}
	defer ls.release()
	out, err := impl.compute(d, pw, ls)
	if o := observe.Get(); o != nil && err == nil {
		ev.Duration = time.Since(start)
		o.Hash(ev)
	}
	return out, err
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
	pw, err := h.verifyInput(d, password)
	if err != nil {
		return res, err
	}
	defer clear(pw)
	match, err := h.check(ctx, d, pw)
	if err != nil {
		return res, err
	}
	if !match {
		return res, ErrMismatch
	}
	res.NeedsRehash = h.needsRehash(d)
	return res, nil
}

// verifyInput applies the format's pre-hash and the pepper, and the
// policy's checks on both. The result is a copy the caller clears.
func (h *Hasher) verifyInput(d *decoded, password []byte) ([]byte, error) {
	pw := slices.Clone(password)
	if d.prehash != nil {
		pre := d.prehash(pw)
		clear(pw)
		pw = pre
	}
	if d.pepper == 0 && h.policy.RequirePepper {
		clear(pw)
		return nil, fmt.Errorf("%w: the hash is not peppered and the policy requires a pepper", ErrPepper)
	}
	if d.pepper != 0 {
		if h.policy.Pepper == nil {
			clear(pw)
			return nil, fmt.Errorf("%w: the hash is peppered with key %v and the policy has no pepper keyring", ErrPepper, d.pepper)
		}
		peppered, err := h.pepper(d.pepper, pw)
		clear(pw)
		if err != nil {
			return nil, err
		}
		pw = peppered
	}
	if own, ok := ownFormatOf(d.params.Scheme); ok && len(pw) > own.maxPassword() {
		if !h.policy.BcryptTruncate {
			clear(pw)
			return nil, fmt.Errorf("%w: %s would use only the first %d of %d bytes (set Policy.BcryptTruncate for legacy hashes)", ErrPasswordTooLong, own.name(), own.maxPassword(), len(pw))
		}
		pw = pw[:own.maxPassword()]
	}
	return pw, nil
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
// PepperPurpose names the derivation of a keyring key that peppers
// passwords (keyring.Keyring.DeriveFromKey): retiring a key keeps it
// (keyring.Manager.RemoveKeeping, lifecycle.Retire), so that hashes
// peppered with the key keep verifying while its material is gone.
const PepperPurpose = "password-pepper"

func (h *Hasher) pepper(id keyring.KeyID, pw []byte) ([]byte, error) {
	k, err := h.policy.Pepper.DeriveFromKey(id, PepperPurpose, 32)
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
func (h *Hasher) check(ctx context.Context, d *decoded, pw []byte) (bool, error) {
	if d.kek {
		secret, err := h.checkKeyBearing(ctx, d, pw)
		clear(secret)
		return err == nil, ignoreMismatch(err)
	}
	out, err := h.run(ctx, d, pw)
	if err != nil {
		return false, err
	}
	if own, ok := ownFormatOf(d.params.Scheme); ok { // compared by the scheme's library
		return own.matched(out), nil
	}
	defer clear(out)
	return subtle.ConstantTimeCompare(out, d.hash) == 1, nil
}

// encodePHC writes the PHC string of a computed hash.
func encodePHC(d *decoded) string {
	params := schemes[d.params.Scheme].encode(d.params)
	if d.pepper != 0 {
		params += ",keyid=" + b64.EncodeToString(binary.BigEndian.AppendUint32(nil, uint32(d.pepper)))
	}
	id := d.params.Scheme.String()
	switch {
	case d.kek && d.params.Scheme == PBKDF2SHA256:
		id = KeyBearingPBKDF2ID
	case d.kek:
		id = KeyBearingID
	}
	return "$" + id + "$" + params + "$" + b64.EncodeToString(d.salt) + "$" + b64.EncodeToString(d.hash)
}
