package password

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWeakness names what is weak and is silent for the presets.
func TestWeakness(t *testing.T) {
	for _, p := range []Params{OWASP(), Strong()} {
		if w := Weakness(p); w != "" {
			t.Errorf("%+v reported weak: %s", p, w)
		}
	}
	if w := Weakness(Params{Scheme: Argon2id, Memory: 1024, Time: 1, Parallelism: 1}); !strings.Contains(w, "weak") {
		t.Errorf("1 MiB Argon2id: %q", w)
	}
	if w := Weakness(Params{Scheme: Bcrypt, Cost: 8}); w == "" {
		t.Error("bcrypt cost 8 not reported")
	}
}

// TestCalibrate proposes parameters that are at least OWASP's smallest and
// within the memory asked for, and refuses nonsense.
func TestCalibrate(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes for a while")
	}
	c, err := Calibrate(context.Background(), 20*time.Millisecond, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	if c.Params.Scheme != Argon2id || c.Params.Memory > 16<<10 || c.Params.Memory < minArgon2Memory || c.Params.Time < 1 || c.Median <= 0 {
		t.Fatalf("%+v", c)
	}
	if _, err := Calibrate(context.Background(), 0, 16<<10); err == nil {
		t.Fatal("zero target accepted")
	}
}

// TestArgon2Implementation names one of the known paths.
func TestArgon2Implementation(t *testing.T) {
	if impl := Argon2Implementation(); !slices.Contains([]string{"avx512", "avx2", "generic"}, impl) {
		t.Fatalf("%q", impl)
	}
}
