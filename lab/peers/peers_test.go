package peers

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestPeers runs every peer that this machine can run, briefly, and checks
// a missing one reports what would bring it. .ci/run installs them all
// and sets WARD_CI, which makes a missing peer a failure.
func TestPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs and interpreters")
	}
	ctx := context.Background()
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check := func(name string, err error, ok bool) {
		t.Helper()
		var me *MissingError
		switch {
		case errors.As(err, &me):
			if me.Install == "" || !errors.Is(err, ErrMissing) || os.Getenv("WARD_CI") != "" {
				t.Fatalf("%s: %v (CI installs every peer's runtime)", name, err)
			}
			t.Logf("%s: %v", name, err)
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		case !ok:
			t.Fatalf("%s: implausible output", name)
		}
	}
	gcm, err := r.AESGCM(ctx, AllIntrinsicsOff, 2, 10, [][2]int{{500, 1000}})
	check("AESGCM", err, err != nil || (len(gcm) == 1 && len(gcm[0].MBps) == 2 && gcm[0].MBps[0] > 0))
	bc, err := r.Argon2BouncyCastle(ctx, 1, 1)
	check("Argon2BouncyCastle", err, err != nil || (bc.FirstMS > 0 && len(bc.WarmMS) == 1 && len(bc.Burst10MS) == 1))
	rb, err := r.AESCBCRuby(ctx, 1)
	check("AESCBCRuby", err, err != nil || (rb.TextChars >= 480 && len(rb.EncryptS) == 1))
	py, err := r.X25519Python(ctx, 0, 3)
	check("X25519Python", err, err != nil || (py.WireBytes == 72 && len(py.MS) == 3))
	// Two hashes, each timed on both clocks, and a process that used
	// memory.
	timed := func(h Hashes) bool {
		return len(h.MS) == 2 && len(h.CPUMS) == 2 && h.CPUMS[0] > 0 && h.CPUMS[1] > 0 && h.PeakRSSMB > 1
	}
	c, lib, err := r.Argon2C(ctx, 1024, 1, 1, 2)
	check("Argon2C", err, err != nil || (timed(c) && lib != ""))
	rs, err := r.Argon2Rust(ctx, 1024, 1, 1, 2)
	check("Argon2Rust", err, err != nil || timed(rs))
	s, err := r.Argon2Sodium(ctx, 1024, 1, 2)
	check("Argon2Sodium", err, err != nil || timed(s))
	t.Setenv("PATH", "/nonexistent")
	if _, err := r.AESCBCRuby(ctx, 1); !errors.Is(err, ErrMissing) {
		t.Fatalf("without ruby: %v", err)
	}
}
