package plugin

import "github.com/wardlab/ward/kms"

// kindOf returns the kms error a kind names (kms.KindNamed); a kind this
// side does not know reads as misconfigured (the plug-in and ward
// disagree).
func kindOf(name string) error {
	if err := kms.KindNamed(name); err != nil {
		return err
	}
	return kms.ErrMisconfigured
}

// KindName returns the protocol's name of the kind err matches
// (kms.ErrKind), or "unavailable" for an error of no kind: a plug-in that
// cannot say what went wrong is treated as a transient failure, during
// which cached keys keep working.
func KindName(err error) string {
	if k := kms.ErrKind(err); k != "other" {
		return k
	}
	return "unavailable"
}
