package password

import (
	"fmt"
)

// scheme is one password hashing scheme: everything ward knows about it,
// in one file per scheme (scheme_argon2.go, scheme_bcrypt.go, …). Formats
// (PHC, bcrypt's modular crypt form, Django, Spring, passlib) are parsed in
// decode.go and hand the scheme its parameters.
type scheme interface {
	// name is the PHC identifier, such as "argon2id".
	name() string
	// setParam sets the PHC parameter key=value (decimal) on p; required
	// lists the keys every hash must have.
	setParam(p *Params, key string, value uint64) error
	required() []string
	// valid checks the parameters' structure (t >= 1, …), before limits.
	valid(p Params) error
	// limit checks p against the limits, each parameter and the total
	// work; it returns a *LimitError.
	limit(p Params, l Limits) error
	// weak says why p is below OWASP's minimums for the scheme, or "".
	weak(p Params) string
	// weakerThan reports whether p costs less than want, of the same scheme.
	weakerThan(p, want Params) bool
	// cost is what one hash holds while it runs: memory in bytes and
	// cores (slots of the limiter).
	cost(p Params) (memory int64, cores int)
	// compute recomputes a hash for check and Hash; memory comes from the
	// limiter's lease.
	compute(d *decoded, pw []byte, l *lease) ([]byte, error)
	// encode writes the PHC parameter list, such as "m=19456,t=2,p=1".
	encode(p Params) string
	// describe is Params.String.
	describe(p Params) string
	// writable reports whether Hash may write the scheme, not only verify it.
	writable() bool
}

// ownFormat is the optional capability of a scheme that writes its own
// hash string rather than PHC (bcrypt's modular crypt form), found by type
// assertion: such a scheme fixes its salt and output lengths, may read
// only a prefix of a long password, has no room to record a pepper key,
// and compares in constant time itself.
type ownFormat interface {
	scheme
	// lengths are the fixed salt and output lengths.
	lengths() (salt, key int)
	// maxPassword is the longest password the scheme reads in full.
	maxPassword() int
	// matched reports whether compute's output says the password matched.
	matched(out []byte) bool
}

// ownFormatOf returns s's ownFormat capability, if it has one.
func ownFormatOf(s Scheme) (ownFormat, bool) {
	o, ok := schemes[s].(ownFormat)
	return o, ok
}

// schemes is the registry: adding a scheme is one file and one line here
// (and a Scheme constant in params.go).
var schemes = map[Scheme]scheme{
	Argon2id:     argon2Scheme{Argon2id},
	Argon2i:      argon2Scheme{Argon2i},
	Argon2d:      argon2Scheme{Argon2d},
	Bcrypt:       bcryptScheme{},
	Scrypt:       scryptScheme{},
	PBKDF2SHA256: pbkdf2SHA256,
	PBKDF2SHA1:   pbkdf2SHA1,
	PBKDF2SHA512: pbkdf2SHA512,
}

func schemeOf(s Scheme) (scheme, error) {
	if impl, ok := schemes[s]; ok {
		return impl, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedScheme, s)
}

// setParamAs decodes a PHC parameter in a scheme's setParam: it returns a
// *LimitError when value does not fit in max.
func setParamAs[T ~uint8 | ~uint32 | ~int](dst *T, name string, value, max uint64) error {
	if value > max {
		return &LimitError{Param: name, Value: value, Max: max}
	}
	*dst = T(value)
	return nil
}

// firstLimit returns the first error of a list of limit checks.
func firstLimit(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// over returns a LimitError if v exceeds max.
func over(name string, v, max uint64) error {
	if v > max {
		return &LimitError{Param: name, Value: v, Max: max}
	}
	return nil
}

// under returns a LimitError (with Max holding the minimum) if v is below
// min.
func under(name string, v, min uint64) error {
	if v < min {
		return &LimitError{Param: name, Value: v, Min: min}
	}
	return nil
}
