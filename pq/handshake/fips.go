package handshake

import (
	"crypto/fips140"
	"errors"
	"fmt"
)

// ErrNotApproved means a suite or backend the FIPS 140-3 mode does not
// approve was asked for while the mode is on (GODEBUG=fips140=on or only,
// crypto/fips140.Enabled): X25519 alone or in a hybrid, ML-KEM-512 (which
// the standard library lacks: it comes from circl), and the circl backend.
var ErrNotApproved = errors.New("handshake: not approved in the FIPS 140-3 mode")

// Approved reports whether a suite with a backend runs in the FIPS 140-3
// mode: outside it, every valid suite does; in it, pure ML-KEM-768 or
// ML-KEM-1024 from the standard library (FIPS 203), unsigned or signed with
// ML-DSA (FIPS 204; a certified module v1.0.0 has no ML-DSA, and signing
// then fails with its error).
func Approved(s Suite, b Backend) bool {
	if !fips140.Enabled() {
		return s.valid()
	}
	return b == Stdlib && (s.KEX == MLKEM768 || s.KEX == MLKEM1024) && s.valid()
}

// ApprovedSuites lists the suites of AllSuites that Approved allows with
// the backend, in the same order.
func ApprovedSuites(b Backend) []Suite {
	var out []Suite
	for _, s := range AllSuites() {
		if Approved(s, b) {
			out = append(out, s)
		}
	}
	return out
}

// checkApproved returns ErrNotApproved, naming the suite and backend, for
// what Approved refuses.
func checkApproved(s Suite, b Backend) error {
	if Approved(s, b) {
		return nil
	}
	return fmt.Errorf("%w: %v with the %v backend (use mlkem768 or mlkem1024, optionally signed with ML-DSA, with the stdlib backend)", ErrNotApproved, s, b)
}
