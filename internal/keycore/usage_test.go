package keycore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

// within reports whether an estimate of n seals is within 15 % of n: the
// estimate's standard deviation at n = 64,000 is 3.1 %, so a right count
// fails this with a probability under 10^-6, and a count that misses a
// seal path (0) or counts one twice (2n) always does.
func within(got uint64, n int) bool {
	return float64(got) > 0.85*float64(n) && float64(got) < 1.15*float64(n)
}

// TestSealsCounted: every seal of a keyring key counts toward it —
// v3, v4 of a column's scope, and in a keyring loaded again from its file
// — and TakeSeals hands each count once; a subject's key is not counted.
func TestSealsCounted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kr.json")
	ks := local.Generate()
	kr, err := Create(ctx, path, ks, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64000
	first := kr.Primary().ID
	for range n / 2 {
		kr.Seal([]byte("v"), []byte("ad"))
	}
	scope := kr.Scope(FieldScope("notes", "body"))
	sk, _ := NewSubjectKey(AES256GCM, 1)
	for range n / 2 {
		if _, err := scope.Seal([]byte("v"), []byte("ad")); err != nil {
			t.Fatal(err)
		}
		sk.AppendSeal(nil, []byte("v"), []byte("ad"))
	}
	got := kr.TakeSeals()
	if len(got) != 1 || !within(got[first], n) {
		t.Fatalf("after %d seals (half v3, half v4) and as many by a subject key: %v", n, got)
	}
	if again := kr.TakeSeals(); len(again) != 0 {
		t.Fatalf("a second TakeSeals: %v, want nothing", again)
	}
	kr.ReturnSeals(got)
	if back := kr.TakeSeals(); back[first] != got[first] {
		t.Fatalf("returned %v, took %v", got, back)
	}
	second, err := kr.Rotate(ctx, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		kr.Seal([]byte("v"), []byte("ad"))
	}
	if got := kr.TakeSeals(); len(got) != 1 || !within(got[second], n) {
		t.Fatalf("after a rotation and a reload, %d seals under %v: %v", n, second, got)
	}
}
