package field

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestIndexPrefixJoin: v1 indexes of one column share one key, so a
// prefix index of "alice@example.com" equals the full index of "ali" and
// a database reader joins the two index columns; v2 indexes each have
// their own key.
func TestIndexPrefixJoin(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	prefix3 := Prefix(3, Fold).Func
	fullV1, _ := NewBlindIndex(kr, "users", "email", WithNormalizer(NormalizeFold))
	prefixV1, _ := NewBlindIndex(kr, "users", "email", WithNormalizer(prefix3))
	if !bytes.Equal(fullV1.Compute("ali"), prefixV1.Compute("Alice@example.com")) {
		t.Fatal("v1: the join this test guards against does not reproduce")
	}
	o := IndexOptions{Database: "db-1", Normalizer: Fold}
	full, err := NewIndex(kr, "users", "email", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Name, o.Normalizer = "email_prefix", Prefix(3, Fold)
	prefix, err := NewIndex(kr, "users", "email", o)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(full.Compute("ali")[5:], prefix.Compute("Alice@example.com")[5:]) {
		t.Fatal("v2: a prefix index equals a full index of the prefix")
	}
	if !bytes.Equal(prefix.Compute("ALIce@x"), prefix.Compute("alI")) {
		t.Fatal("v2: the prefix index does not find a value by its first three runes")
	}
	// The same normaliser under another name, or of another size, is
	// another key too.
	o.Name = "other"
	other, _ := NewIndex(kr, "users", "email", o)
	o.Name, o.Size = "email_prefix", 8
	short, _ := NewIndex(kr, "users", "email", o)
	if bytes.Equal(other.Compute("ali")[5:], prefix.Compute("ali")[5:]) || bytes.Equal(short.Compute("ali")[5:], prefix.Compute("ali")[5:13]) {
		t.Fatal("v2: two indexes of one column share a key")
	}
}

// TestIndexEpochs: a v2 index names its epoch; after a rotation a copy of
// the keyring file from before cannot compute the new epoch's index (nor
// test guesses against it), the older epoch computes until its key is
// retired, and then fails with ErrEpochEnded.
func TestIndexEpochs(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	oldFile, _ := kr.Marshal(ctx, mk)
	o := IndexOptions{Database: "db-1", Normalizer: Fold}
	first, _ := NewIndex(kr, "users", "email", o)
	e1 := kr.Primary().ID
	if e, err := IndexEpoch(first.Compute("a@x")); err != nil || e != e1 || first.Epoch() != e1 {
		t.Fatalf("the index names epoch %v (%v), want %v", e, err, e1)
	}
	e2, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := NewIndex(kr, "users", "email", o)
	if second.Epoch() != e2 || bytes.Equal(first.Compute("a@x")[5:], second.Compute("a@x")[5:]) {
		t.Fatal("a rotation did not start a new index key")
	}
	old, err := keyring.Unmarshal(ctx, oldFile, mk)
	if err != nil {
		t.Fatal(err)
	}
	o.Epoch = e2
	if _, err := NewIndex(old, "users", "email", o); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Fatalf("a file from before the rotation computes the new epoch's index: %v", err)
	}
	o.Epoch = e1
	if again, err := NewIndex(kr, "users", "email", o); err != nil || !bytes.Equal(again.Compute("a@x"), first.Compute("a@x")) {
		t.Fatalf("the older epoch before its retirement: %v", err)
	}
	if err := keyring.NewManager(kr).Remove(ctx, e1); err != nil {
		t.Fatal(err)
	}
	if _, err := NewIndex(kr, "users", "email", o); !errors.Is(err, keyring.ErrEpochEnded) {
		t.Fatalf("the retired key's epoch: %v, want ErrEpochEnded", err)
	}
}

// TestIndexOptions: a v2 index needs a database, a named normaliser and a
// size in range; names ParseNormalizer does not know are refused there.
func TestIndexOptions(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	for name, o := range map[string]IndexOptions{
		"no database":        {},
		"unnamed normaliser": {Database: "d", Normalizer: Normalizer{Func: NormalizeNFC, Version: 1}},
		"version 0":          {Database: "d", Normalizer: Normalizer{Name: "x", Func: NormalizeNFC}},
		"upper case name":    {Database: "d", Normalizer: Normalizer{Name: "NFC", Version: 1, Func: NormalizeNFC}},
		"prefix 0":           {Database: "d", Normalizer: Prefix(0, NFC)},
		"size 3":             {Database: "d", Size: 3},
		"size 33":            {Database: "d", Size: 33},
	} {
		if _, err := NewIndex(kr, "t", "c", o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	x, err := NewIndex(kr, "t", "c", IndexOptions{Database: "d", Normalizer: Normalizer{Name: "app:phone", Version: 3, Func: NormalizeNFC}})
	if err != nil || len(x.Compute("1")) != 5+DefaultIndexSize {
		t.Fatalf("an application's own normaliser: %v", err)
	}
	for _, bad := range []struct {
		name string
		v    uint32
	}{{"app:phone", 1}, {"nfc", 2}, {"fold+prefix-0", 1}, {"fold+prefix-257", 1}, {"fold+prefix-07", 1}, {"nfc+prefix-x", 1}} {
		if _, err := ParseNormalizer(bad.name, bad.v); err == nil {
			t.Errorf("ParseNormalizer(%q, %d) accepted", bad.name, bad.v)
		}
	}
	if n, err := ParseNormalizer("fold+prefix-256", 1); err != nil || n.Func("ÀBC") != "àbc" {
		t.Fatalf("fold+prefix-256: %v", err)
	}
}

// FuzzIndexEpoch: IndexEpoch never panics, accepts only the v2 form's
// lengths, and reads the epoch a computed index names.
func FuzzIndexEpoch(f *testing.F) {
	kr, _ := keyring.New(keyring.AES256GCM)
	x, _ := NewIndex(kr, "t", "c", IndexOptions{Database: "d"})
	f.Add(x.Compute("v"))
	f.Add([]byte{2, 0, 0, 0, 0, 1, 2, 3, 4})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := IndexEpoch(b)
		if err == nil && (len(b) < 9 || len(b) > 37 || b[0] != 2 || e == 0) {
			t.Fatalf("%x accepted", b)
		}
		if err != nil && !errors.Is(err, ErrIndexForm) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
