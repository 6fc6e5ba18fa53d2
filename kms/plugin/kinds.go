package plugin

import (
	"errors"

	"github.com/wardlab/ward/kms"
)

// The kinds of failure a plug-in reports, each ward's kms error of the
// same meaning (FORMAT.md lists them).
var kinds = []struct {
	name string
	err  error
}{
	{"unavailable", kms.ErrUnavailable},
	{"throttled", kms.ErrThrottled},
	{"misconfigured", kms.ErrMisconfigured},
	{"unknown-key", kms.ErrUnknownKey},
	{"access-denied", kms.ErrAccessDenied},
	{"invalid-ciphertext", kms.ErrInvalidCiphertext},
}

// kindOf returns the kms error a kind names; a kind this side does not
// know reads as misconfigured (the plug-in and ward disagree).
func kindOf(name string) error {
	for _, k := range kinds {
		if k.name == name {
			return k.err
		}
	}
	return kms.ErrMisconfigured
}

// KindName returns the protocol's name of the kind err matches
// (errors.Is against kms.ErrUnavailable, …), or "unavailable" for an
// error of no kind: a plug-in that cannot say what went wrong is treated
// as a transient failure, during which cached keys keep working.
func KindName(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "unavailable"
}
