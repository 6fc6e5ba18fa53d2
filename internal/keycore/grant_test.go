package keycore

import (
	"bytes"
	"context"
	"crypto/fips140"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

// TestGrantOpensItsScopeOnly: a grant for notes.title, sealed under the
// reader's own master key, opens the title's v4 values under every key it
// derives from, and nothing else: not the body, not a v3 title, not a
// value of a key added after it, and it never seals.
func TestGrantOpensItsScopeOnly(t *testing.T) {
	ctx := context.Background()
	kr := mustNew(t, AES256GCM)
	title, body := kr.Scope(FieldScope("notes", "title")), kr.Scope(FieldScope("notes", "body"))
	oldTitle, _ := title.Seal([]byte("old title"), []byte("row 1"))
	kr.Rotate(ctx, AES256GCM)
	t1, _ := title.Seal([]byte("a title"), []byte("row 1"))
	b1, _ := body.Seal([]byte("a body"), []byte("row 1"))
	v3, _ := kr.Seal([]byte("v3"), []byte("row 1"))

	g, err := kr.Grant([]GrantScope{{Table: "notes", Column: "title"}})
	if err != nil {
		t.Fatal(err)
	}
	reader := local.Generate()
	file, err := g.Marshal(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(file, kr.load().primary.material) || strings.Contains(g.String(), fmt.Sprintf("%x", kr.load().primary.material[:4])) {
		t.Fatal("the grant shows key material")
	}
	path := filepath.Join(t.TempDir(), "titles.grant")
	os.WriteFile(path, file, 0o600)
	back, err := LoadGrant(ctx, path, reader)
	if err != nil || back.ID() != g.ID() || back.Keyring() != kr.ID() || len(back.Keys()) != 2 || fmt.Sprint(back.Scopes()) != "[notes.title]" {
		t.Fatalf("a grant read back: %v %v", back, err)
	}
	s, err := back.Scope("notes", "title")
	if err != nil {
		t.Fatal(err)
	}
	for want, ct := range map[string][]byte{"a title": t1, "old title": oldTitle} {
		if got, err := s.Open(ct, []byte("row 1")); err != nil || string(got) != want {
			t.Fatalf("%s: %q %v", want, got, err)
		}
	}
	if _, err := s.Open(t1, []byte("row 2")); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("another row: %v", err)
	}
	if _, err := s.Open(b1, []byte("row 1")); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("a body value under the title's keys: %v", err)
	}
	if _, err := back.Scope("notes", "body"); !errors.Is(err, ErrNotGranted) {
		t.Fatalf("the body's scope: %v", err)
	}
	if _, err := s.Open(v3, []byte("row 1")); !errors.Is(err, ErrNotGranted) && !fips140.Enabled() { // (in the FIPS mode Seal writes v4)
		t.Fatalf("a v3 value: %v", err)
	}
	if _, err := s.Seal([]byte("x"), nil); !errors.Is(err, ErrGrantSeals) {
		t.Fatalf("a grant sealed: %v", err)
	}
	kr.Rotate(ctx, AES256GCM)
	t2, _ := title.Seal([]byte("newer"), []byte("row 1"))
	if _, err := s.Open(t2, []byte("row 1")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a key added after the grant: %v", err)
	}
}

// TestGrantFileAttacks: a grant file opens only under its reader's key,
// and a header edited to claim another scope or key is refused.
func TestGrantFileAttacks(t *testing.T) {
	ctx := context.Background()
	kr := mustNew(t, AES256GCM)
	g, _ := kr.Grant([]GrantScope{{Table: "notes", Column: "title"}})
	reader := local.Generate()
	file, _ := g.Marshal(ctx, reader)
	if _, err := UnmarshalGrant(ctx, file, local.Generate()); !errors.Is(err, ErrWrongWrapper) {
		t.Fatalf("another master key: %v", err)
	}
	for name, edit := range map[string]func(d map[string]any){
		"scopes": func(d map[string]any) { d["scopes"] = []string{"notes.body"} },
		"keys":   func(d map[string]any) { d["keys"] = []string{"00000001"} },
		"id":     func(d map[string]any) { d["id"] = "g-0000000000000000" },
		"format": func(d map[string]any) { d["format"] = "ward-grant/v9" },
		"sealed": func(d map[string]any) { d["sealed"] = "AAAA" },
	} {
		var d map[string]any
		json.Unmarshal(file, &d)
		edit(d)
		bad, _ := json.Marshal(d)
		_, err := UnmarshalGrant(ctx, bad, reader)
		var ve *VersionError
		if !errors.Is(err, ErrCorruptKeyring) && !errors.As(err, &ve) {
			t.Fatalf("%s edited: %v", name, err)
		}
	}
	if _, err := kr.Grant(nil); err == nil {
		t.Fatal("a grant without a scope")
	}
	if _, err := kr.Grant([]GrantScope{{Table: "notes", Column: "title"}}, 12345); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a grant of an unknown key: %v", err)
	}
	for in, want := range map[string]string{"notes.title": "notes.title", "app.notes.title": "app.notes.title"} {
		if s, err := ParseGrantScope(in); err != nil || s.String() != want {
			t.Fatalf("ParseGrantScope(%q) = %v %v", in, s, err)
		}
	}
	for _, bad := range []string{"notes", ".title", "notes.", ""} {
		if _, err := ParseGrantScope(bad); err == nil {
			t.Fatalf("ParseGrantScope(%q) accepted", bad)
		}
	}
}

// TestGrantIsAWriteCapability states what SECURITY.md says of grants: the
// keys a grant holds are the column's AEAD keys, so a holder who can write
// the database seals a value (here with the scope key exactly as a sealing
// scope would) that the keyring's holder opens as genuine. The library
// never seals with a grant (ErrGrantSeals); the key material allows it.
func TestGrantIsAWriteCapability(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	g, err := kr.Grant([]GrantScope{{Table: "notes", Column: "title"}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := g.Scope("notes", "title")
	if _, err := s.Seal([]byte("x"), []byte("row 1")); !errors.Is(err, ErrGrantSeals) {
		t.Fatalf("a grant sealed through the library: %v", err)
	}
	k := s.fixed[kr.load().primary.ID]
	if k == nil {
		t.Fatal("the grant holds no key of the primary")
	}
	adp, ad := pooledAD([]byte("row 1"))
	forged := k.appendSeal(nil, []byte("set by the reader"), ad)
	releaseAD(adp, ad)
	got, err := kr.Scope(FieldScope("notes", "title")).Open(forged, []byte("row 1"))
	if err != nil || string(got) != "set by the reader" {
		t.Fatalf("the keyring did not open the grant holder's value: %q %v", got, err)
	}
}
