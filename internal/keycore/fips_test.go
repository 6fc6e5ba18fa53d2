package keycore

import (
	"crypto/fips140"
	"errors"
	"testing"
)

// The tests also run in the FIPS 140-3 mode (GODEBUG=fips140=only, in
// .ci/run). There ciphertext v3 is never sealed and XChaCha20-Poly1305 is
// refused: a test of the one skips with skipV3Sealing, a test of the
// other asserts the refusal with refusedInFIPS (SECURITY.md lists them).

// skipV3Sealing skips a test of ciphertext v3's sealing in the FIPS mode.
func skipV3Sealing(t testing.TB) {
	t.Helper()
	if fips140.Enabled() {
		t.Skip("FIPS 140-3 mode: ciphertext v3 is not sealed (its check needs the nonce, which the module draws); the default run covers this")
	}
}

// refusedInFIPS reports, in the FIPS mode and for XChaCha20-Poly1305,
// that err is the refusal it must be (failing the test otherwise); the
// caller then stops testing alg.
func refusedInFIPS(t testing.TB, alg Algorithm, err error) bool {
	t.Helper()
	if !fips140.Enabled() || alg != XChaCha20Poly1305 {
		return false
	}
	if !errors.Is(err, ErrNotApproved) {
		t.Fatalf("%v in the FIPS 140-3 mode: %v, want ErrNotApproved", alg, err)
	}
	return true
}
