package kms

import (
	"errors"
	"time"

	"github.com/wardlab/ward/observe"
)

// Observe reports one call to ks that began at start and ended with err
// (nil: success) to the process's observer (package observe), if any:
// ward's own calls to a key service (keyring and grant files, envelope
// data keys) all do.
func Observe(ks KeyService, op string, start time.Time, err error) {
	o := observe.Get()
	if o == nil {
		return
	}
	c := observe.KMSCall{Provider: ks.Key().Provider, Op: op, Duration: time.Since(start)}
	if err != nil {
		c.ErrKind = ErrKind(err)
	}
	o.KMS(c)
}

// kinds names each kind of a key service's failure: the names observers
// report and the key-service plug-in protocol carries (FORMAT.md).
var kinds = []struct {
	err  error
	name string
}{
	{ErrUnavailable, "unavailable"}, {ErrThrottled, "throttled"}, {ErrMisconfigured, "misconfigured"},
	{ErrUnknownKey, "unknown-key"}, {ErrAccessDenied, "access-denied"}, {ErrInvalidCiphertext, "invalid-ciphertext"},
}

// ErrKind names the kind of a key service's failure: "unavailable",
// "throttled", "misconfigured", "unknown-key", "access-denied",
// "invalid-ciphertext", or "other" for an error of no kind.
func ErrKind(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

// KindNamed returns the error of the kind ErrKind names name, or nil for
// a name it does not give ("other" included).
func KindNamed(name string) error {
	for _, k := range kinds {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// cacheHit reports an envelope data key served from the cache.
func (e *Envelope) cacheHit() {
	if o := observe.Get(); o != nil {
		o.KMS(observe.KMSCall{Provider: e.ks.Key().Provider, Op: "cache-hit"})
	}
}
