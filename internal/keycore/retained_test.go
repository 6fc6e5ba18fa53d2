package keycore

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
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

var updateRetained = flag.Bool("update-retained", false, "write testdata/retained-v1.json (only when the fields it shows are added)")

// retainedGolden is a keyring file with a removed key, its kept pepper
// derivation and an anchor with counters and columns, and what reading it
// must give.
type retainedGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Removed   uint32          `json:"removed"`
	Pepper    string          `json:"pepper_hex"`
	Database  string          `json:"database"`
	Anchor    Anchor          `json:"anchor"`
}

// TestGoldenRetained reads testdata/retained-v1.json: the removed key is
// listed, its kept derivation is the recorded bytes, its material is gone,
// and the anchor carries its counters and columns.
func TestGoldenRetained(t *testing.T) {
	ctx := context.Background()
	const path = "../../keyring/testdata/retained-v1.json"
	if *updateRetained {
		mk := local.Generate()
		kr, _ := New(AES256GCM)
		old := kr.Primary().ID
		pepper, _ := kr.DeriveFromKey(old, "password-pepper", 32)
		kr.Rotate(ctx, AES256GCM)
		if err := kr.RemoveKeeping(ctx, old, "password-pepper"); err != nil {
			t.Fatal(err)
		}
		a := Anchor{Counter: 7, Epoch: kr.StateEpoch(), Marks: []string{"m"}, Counters: map[string]uint64{"subject.forgotten:users": 3}, Columns: []string{"notes.body"}}
		if err := kr.SetAnchor(ctx, "db-0123456789abcdef", a); err != nil {
			t.Fatal(err)
		}
		data, _ := kr.Marshal(ctx, mk)
		g := retainedGolden{Comment: "a keyring file (v2) with a removed key, its kept pepper derivation, and an anchor with counters and columns; written once with -update-retained",
			MasterKey: mk.Encode(), Keyring: data, Removed: uint32(old), Pepper: hex.EncodeToString(pepper), Database: "db-0123456789abcdef", Anchor: a}
		b, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g retainedGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	mk, err := local.Parse(g.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := Unmarshal(ctx, g.Keyring, mk)
	if err != nil {
		t.Fatal(err)
	}
	id := KeyID(g.Removed)
	got, err := kr.DeriveFromKey(id, "password-pepper", 32)
	if err != nil || hex.EncodeToString(got) != g.Pepper {
		t.Fatalf("the kept pepper: %x %v", got, err)
	}
	if _, ok := kr.Lookup(id); ok || len(kr.Removed()) != 1 || kr.Removed()[0] != id {
		t.Fatalf("removed: %v", kr.Removed())
	}
	a, ok := kr.Anchor(g.Database)
	if !ok || !a.equal(g.Anchor) {
		t.Fatalf("anchor %+v, want %+v", a, g.Anchor)
	}
}
