package handshake

import (
	"context"
	"crypto/fips140"
	"errors"
	"slices"
	"testing"
)

// plain is the unsigned suite tests use where the exchange does not
// matter: X25519, or ML-KEM-768 in the FIPS 140-3 mode, which refuses
// X25519.
var plain = func() Suite {
	if fips140.Enabled() {
		return Suite{MLKEM768, SigNone}
	}
	return Suite{X25519, SigNone}
}()

// hybrid is X25519+ML-KEM-768, or ML-KEM-768 in the FIPS 140-3 mode.
var hybrid = func() Suite {
	if fips140.Enabled() {
		return Suite{MLKEM768, SigNone}
	}
	return Suite{X25519MLKEM768, SigNone}
}()

// refused reports whether the FIPS 140-3 mode refuses the suite with the
// backend, and then asserts that a client refuses it before any I/O with
// ErrNotApproved: the caller skips the case.
func refused(t *testing.T, s Suite, b Backend) bool {
	t.Helper()
	if Approved(s, b) {
		return false
	}
	_, err := Client(context.Background(), nil, &ClientConfig{Suite: s, Backend: b, InsecureSkipPin: true})
	if !errors.Is(err, ErrNotApproved) {
		t.Errorf("%v/%v in the FIPS 140-3 mode: %v, want ErrNotApproved", s, b, err)
	}
	return true
}

// TestFIPSProfile: outside the FIPS 140-3 mode every suite is approved;
// in it (GODEBUG=fips140=on or only, which .ci/run runs) pure ML-KEM-768
// and ML-KEM-1024 from the standard library, unsigned or signed with
// ML-DSA, and nothing else: a client refuses the rest before connecting,
// and a server answers a hello of theirs with the suite alert.
func TestFIPSProfile(t *testing.T) {
	if !fips140.Enabled() {
		if !slices.Equal(ApprovedSuites(Stdlib), AllSuites()) || !slices.Equal(ApprovedSuites(Circl), AllSuites()) {
			t.Fatal("outside the FIPS 140-3 mode every suite is approved")
		}
		return
	}
	var want []Suite
	for _, k := range []KEX{MLKEM768, MLKEM1024} {
		want = append(want, Suite{k, SigNone})
	}
	for _, k := range []KEX{MLKEM768, MLKEM1024} {
		for s := MLDSA44; s <= MLDSA87; s++ {
			want = append(want, Suite{k, s})
		}
	}
	got := ApprovedSuites(Stdlib)
	slices.SortFunc(got, func(a, b Suite) int { return int(a.wire()) - int(b.wire()) })
	slices.SortFunc(want, func(a, b Suite) int { return int(a.wire()) - int(b.wire()) })
	if !slices.Equal(got, want) || len(ApprovedSuites(Circl)) != 0 {
		t.Fatalf("approved: %v (circl %v), want %v", got, ApprovedSuites(Circl), want)
	}
	for _, s := range []Suite{{X25519, SigNone}, {X25519MLKEM768, MLDSA65}, {MLKEM512, SigNone}} {
		if !refused(t, s, Stdlib) {
			t.Errorf("%v approved", s)
		}
		err := rawServer(t, &ServerConfig{Keys: serverKeys(t)}, hdr(frameClientHello, Version, s.wire(), uint32(clientHelloSize(s))), true)
		if !errors.Is(err, ErrUnsupportedSuite) {
			t.Errorf("a server offered %v: %v, want ErrUnsupportedSuite", s, err)
		}
	}
	cr, sr, cerr, serr := pair(t, &ClientConfig{Suite: Suite{MLKEM1024, MLDSA87}, InsecureSkipPin: true}, &ServerConfig{Keys: serverKeys(t)})
	if cerr != nil || serr != nil || cr.Key != sr.Key {
		t.Fatalf("ML-KEM-1024 + ML-DSA-87 in the FIPS 140-3 mode: %v %v", cerr, serr)
	}
}
