package keyring_test

import (
	"context"
	"crypto/fips140"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// vectorFile is the part of a testdata file of ciphertext vectors that a
// reader of the public API needs (FORMAT.md names the fields).
type vectorFile struct {
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Vectors   []struct {
		Algorithm  string `json:"alg"`
		Context    string `json:"context"`
		ContextHex string `json:"context_hex"`
		ScopeHex   string `json:"scope_hex"`
		Plaintext  string `json:"plaintext"`
		Ciphertext string `json:"ciphertext_hex"`
		Text       string `json:"text"`
	} `json:"vectors"`
}

func readVectors(t *testing.T, name string) (*keyring.Keyring, vectorFile) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	mk, err := local.Parse(f.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Unmarshal(context.Background(), f.Keyring, mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr, f
}

// TestFaceOpensEveryVector: the public API (Keyring.Open, Scope.Open,
// DecodeText) opens every checked-in ciphertext vector of v1 to v4, so
// the move of the mechanism into internal/keycore changed no byte of any
// format.
func TestFaceOpensEveryVector(t *testing.T) {
	for _, name := range []string{"v1-vectors.json", "v2-vectors.json", "v3-vectors.json", "v4-vectors.json"} {
		t.Run(name, func(t *testing.T) {
			kr, f := readVectors(t, name)
			if len(f.Vectors) == 0 {
				t.Fatal("no vectors")
			}
			for i, v := range f.Vectors {
				ct, err := hex.DecodeString(v.Ciphertext)
				if err != nil {
					t.Fatal(err)
				}
				if fromText, err := keyring.DecodeText(v.Text); err != nil || !slices.Equal(fromText, ct) {
					t.Fatalf("vector %d: the text form does not decode to the binary form: %v", i, err)
				}
				cx := []byte(v.Context)
				if v.ContextHex != "" || v.ScopeHex != "" || name == "v4-vectors.json" {
					cx, _ = hex.DecodeString(v.ContextHex)
				}
				var pt []byte
				if name == "v4-vectors.json" {
					scope, _ := hex.DecodeString(v.ScopeHex)
					pt, err = kr.Scope(string(scope)).Open(ct, cx)
				} else {
					pt, err = kr.Open(ct, cx)
				}
				if fips140.Enabled() && v.Algorithm == keyring.XChaCha20Poly1305.String() {
					if !errors.Is(err, keyring.ErrNotApproved) {
						t.Fatalf("vector %d (%s) in the FIPS 140-3 mode: %v, want ErrNotApproved", i, v.Algorithm, err)
					}
					continue
				}
				if err != nil || string(pt) != v.Plaintext {
					t.Fatalf("vector %d (%s): %q, %v; want %q", i, v.Algorithm, pt, err, v.Plaintext)
				}
			}
		})
	}
}

// TestManager: the lifecycle goes through a Manager, each change saved to
// the file before it takes effect, and a disabled key opens nothing.
func TestManager(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keyring.json")
	mk := local.Generate()
	kr, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	m := keyring.NewManager(kr)
	if m.Keyring() != kr {
		t.Fatal("Manager.Keyring is not the keyring it manages")
	}
	first := kr.Primary().ID
	ct, _ := kr.Seal([]byte("v"), []byte("c"))
	next, err := m.Add(ctx, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := kr.Lookup(next); info.State != keyring.DecryptOnly {
		t.Fatalf("an added key is %v, want decrypt-only", info.State)
	}
	if err := m.Promote(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := m.Disable(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Open(ct, []byte("c")); !errors.Is(err, keyring.ErrKeyDisabled) {
		t.Fatalf("a value under a disabled key: %v, want ErrKeyDisabled", err)
	}
	if err := m.Enable(ctx, first); err != nil {
		t.Fatal(err)
	}
	if pt, err := kr.Open(ct, []byte("c")); err != nil || string(pt) != "v" {
		t.Fatalf("after Enable: %q, %v", pt, err)
	}
	other := local.Generate()
	if err := m.Rewrap(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Load(ctx, path, mk); !errors.Is(err, keyring.ErrWrongWrapper) {
		t.Fatalf("the old master key after Rewrap: %v, want ErrWrongWrapper", err)
	}
	back, err := keyring.Load(ctx, path, other)
	if err != nil {
		t.Fatal(err)
	}
	if back.Primary().ID != next || back.Generation() != kr.Generation() {
		t.Fatalf("the file holds primary %v generation %d, the process %v %d", back.Primary().ID, back.Generation(), next, kr.Generation())
	}
	if err := m.Remove(ctx, first); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kr.Removed(), []keyring.KeyID{first}) {
		t.Fatalf("Removed() = %v", kr.Removed())
	}
	if _, err := kr.Open(ct, []byte("c")); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Fatalf("a value under a removed key: %v, want ErrUnknownKey", err)
	}
}

// TestFaceParsers: the names a command line or a file gives.
func TestFaceParsers(t *testing.T) {
	for _, alg := range keyring.Algorithms() {
		got, err := keyring.ParseAlgorithm(strings.ToLower(alg.String()))
		if err != nil || got != alg {
			t.Fatalf("ParseAlgorithm(%q) = %v, %v", alg, got, err)
		}
		if n := keyring.Overhead(alg); n != 11+alg.NonceSize()+keyring.TagSize {
			t.Fatalf("Overhead(%v) = %d", alg, n)
		}
	}
	if _, err := keyring.ParseAlgorithm("DES"); err == nil {
		t.Fatal("ParseAlgorithm accepted DES")
	}
	sc, err := keyring.ParseGrantScope("app.notes.title")
	if err != nil || sc.Table != "app.notes" || sc.Column != "title" {
		t.Fatalf("ParseGrantScope = %+v, %v", sc, err)
	}
	if _, err := keyring.ParseGrantScope("title"); err == nil {
		t.Fatal("ParseGrantScope accepted a scope without a table")
	}
}

// TestGrantFile: a grant written with Marshal and read with LoadGrant
// under the reader's key opens its column, refuses another, and never
// seals.
func TestGrantFile(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	g, err := kr.Grant([]keyring.GrantScope{{Table: "notes", Column: "title"}})
	if err != nil {
		t.Fatal(err)
	}
	reader := local.Generate()
	data, err := g.Marshal(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "grant.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := keyring.LoadGrant(ctx, path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != g.ID() || back.Keyring() != kr.ID() || !slices.Equal(back.Keys(), []keyring.KeyID{kr.Primary().ID}) {
		t.Fatalf("the grant read back: %v", back)
	}
	ct, _ := kr.Scope(keyring.FieldScope("notes", "title")).Seal([]byte("t"), []byte("row 1"))
	s, err := back.Scope("notes", "title")
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := s.Open(ct, []byte("row 1")); err != nil || string(pt) != "t" {
		t.Fatalf("the grant's scope: %q, %v", pt, err)
	}
	if _, err := s.Seal([]byte("x"), nil); !errors.Is(err, keyring.ErrGrantSeals) {
		t.Fatalf("a grant sealed: %v", err)
	}
	if _, err := back.Scope("notes", "body"); !errors.Is(err, keyring.ErrNotGranted) {
		t.Fatalf("another column: %v, want ErrNotGranted", err)
	}
}
