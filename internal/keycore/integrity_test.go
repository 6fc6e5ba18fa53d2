package keycore

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"os"
	"testing"
)

// TestIntegrityEpochs: the integrity key of an epoch is its key's, an
// older epoch keeps verifying after a rotation, a retired key's epoch
// ends, and a copy of the file from before a rotation cannot derive the
// new epoch's keys (it never held them) — nor does the keyring accept its
// records once the old epoch ends.
func TestIntegrityEpochs(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	oldCopy, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e1, k1, err := kr.IntegrityKey("test")
	if err != nil || e1 != kr.Primary().ID {
		t.Fatalf("epoch %v, %v: want the primary's", e1, err)
	}
	want, _ := hkdf.Key(sha256.New, kr.load().primary.material, nil, "ward keyring key-derive v1\x00ward integrity v1\x00test", 32)
	if !bytes.Equal(k1, want) {
		t.Fatal("the integrity key is not FORMAT.md's derivation")
	}
	if other, _ := kr.IntegrityKeyAt(e1, "other purpose"); bytes.Equal(other, k1) {
		t.Fatal("two purposes share a key")
	}
	e2, err := kr.Rotate(ctx, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if e, k2, _ := kr.IntegrityKey("test"); e != e2 || bytes.Equal(k2, k1) {
		t.Fatalf("after a rotation the epoch is %v (want %v) or its key is the old one", e, e2)
	}
	if k, err := kr.IntegrityKeyAt(e1, "test"); err != nil || !bytes.Equal(k, k1) {
		t.Fatalf("the older epoch after a rotation: %v", err)
	}
	old, err := Unmarshal(ctx, oldCopy, mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.IntegrityKeyAt(e2, "test"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a file from before the rotation derives the new epoch: %v", err)
	}
	if err := kr.RemoveKeeping(ctx, e1); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.IntegrityKeyAt(e1, "test"); !errors.Is(err, ErrEpochEnded) {
		t.Fatalf("the retired key's epoch: %v, want ErrEpochEnded", err)
	}
	if _, err := kr.IntegrityKeyAt(0x0badf00d, "test"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("an epoch the keyring never had: %v, want ErrUnknownKey", err)
	}
}
