package keyring

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

// TestRemoveKeeping: a key removed keeping a derivation answers
// DeriveFromKey for that purpose with the same bytes, from its file too,
// and for nothing else: its material is gone (values under it do not
// open), other purposes fail with ErrKeyRemoved, and its ID is listed as
// removed.
func TestRemoveKeeping(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	path := filepath.Join(t.TempDir(), "kr.json")
	kr, err := Create(ctx, path, mk, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	old := kr.Primary().ID
	ct, err := kr.Seal([]byte("secret"), []byte("ctx"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := kr.DeriveFromKey(old, "password-pepper", 32)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	if err := kr.RemoveKeeping(ctx, old, "password-pepper"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*Keyring{kr, mustLoad(t, path, mk)} {
		got, err := k.DeriveFromKey(old, "password-pepper", 32)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the kept derivation: %x %v", got, err)
		}
		if _, err := k.DeriveFromKey(old, "other", 32); !errors.Is(err, ErrKeyRemoved) || !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("another purpose of a removed key: %v", err)
		}
		if _, err := k.DeriveFromKey(old, "password-pepper", 16); err == nil {
			t.Fatal("a kept derivation of another length")
		}
		if _, err := k.Open(ct, []byte("ctx")); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("a value under the removed key: %v", err)
		}
		if _, ok := k.Lookup(old); ok || len(k.Removed()) != 1 || k.Removed()[0] != old {
			t.Fatalf("removed: %v", k.Removed())
		}
	}
	if err := kr.RemoveKeeping(ctx, kr.Primary().ID); !errors.Is(err, ErrPrimaryKey) {
		t.Fatalf("removing the primary: %v", err)
	}
}

func mustLoad(t *testing.T, path string, mk *local.MasterKey) *Keyring {
	t.Helper()
	kr, err := Load(context.Background(), path, mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}
