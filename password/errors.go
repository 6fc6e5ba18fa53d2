package password

import (
	"errors"
	"fmt"
)

// Errors. Callers tell them apart with errors.Is; none quotes a password.
var (
	// ErrNotApproved means the FIPS 140-3 mode (crypto/fips140.Enabled)
	// is on and the scheme, or its parameters, are not approved there: new
	// hashes are PBKDF2-SHA-256 (Argon2id, bcrypt and scrypt are not
	// approved; hashes of theirs still verify, and a log-in upgrades
	// them), key-bearing hashes (private mode) are unavailable, and a
	// PBKDF2 hash with a salt under 128 bits cannot be verified.
	ErrNotApproved = errors.New("password: not approved in the FIPS 140-3 mode")
	// ErrMismatch means the password does not match the hash.
	ErrMismatch = errors.New("password: password does not match")
	// ErrMalformed means the encoded hash does not parse. See [ParseError].
	ErrMalformed = errors.New("password: malformed hash")
	// ErrUnsupportedScheme means the hash names a scheme ward does not
	// verify, or one the policy does not accept.
	ErrUnsupportedScheme = errors.New("password: unsupported scheme")
	// ErrLimit means the hash's parameters exceed the policy's hard
	// limits (or its output is shorter than the minimum); nothing was
	// computed. See [LimitError].
	ErrLimit = errors.New("password: parameters exceed the policy's limits")
	// ErrWeakParams means Hash was asked to write parameters below the
	// minimums without Policy.AllowWeak.
	ErrWeakParams = errors.New("password: parameters are too weak")
	// ErrPasswordTooLong means the password is longer than
	// Limits.MaxPasswordLen, or longer than bcrypt's 72 bytes.
	ErrPasswordTooLong = errors.New("password: password too long")
	// ErrEmptyPassword means the password is empty and the policy does not
	// allow empty passwords.
	ErrEmptyPassword = errors.New("password: empty password")
	// ErrBusy means the limiter's wait queue is full.
	ErrBusy = errors.New("password: too many hashes in progress, try again later")
	// ErrPepper means the hash was peppered with a key that is not
	// available, or is not peppered while the policy requires it.
	ErrPepper = errors.New("password: pepper key not available")
)

// ParseError reports where an encoded hash is malformed. It quotes the
// format, never the hash or salt bytes. It matches [ErrMalformed].
type ParseError struct {
	Format string // "phc", "bcrypt", "django", "spring", …
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("password: malformed %s hash: %s", e.Format, e.Reason)
}

// Is reports whether target is ErrMalformed.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// LimitError reports a parameter over its hard limit (Max), or under its
// floor (Min, for the hash length). It matches [ErrLimit].
type LimitError struct {
	Param string
	Value uint64
	Max   uint64
	Min   uint64
}

func (e *LimitError) Error() string {
	if e.Min > 0 {
		return fmt.Sprintf("password: %s=%d is below the minimum of %d", e.Param, e.Value, e.Min)
	}
	return fmt.Sprintf("password: %s=%d exceeds the limit of %d", e.Param, e.Value, e.Max)
}

// Is reports whether target is ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }
