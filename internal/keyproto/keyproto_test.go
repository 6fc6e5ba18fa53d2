package keyproto

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardlab/ward/keyring"
)

// TestProtocol goes through every function once, on a real keyring and
// subject keys: what the hooks carry arrives with its types.
func TestProtocol(t *testing.T) {
	ctx := context.Background()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	epoch, mac := StateMAC(kr, []byte("state"))
	if epoch != StateEpoch(kr) || VerifyStateMAC(kr, epoch, []byte("state"), mac) != nil {
		t.Fatal("a state MAC does not verify")
	}
	if err := VerifyStateMAC(kr, epoch, []byte("other"), mac); !errors.Is(err, keyring.ErrStateMAC) {
		t.Fatalf("a MAC of other state: %v", err)
	}
	if err := SetAnchor(ctx, kr, "db-1", keyring.Anchor{Counter: 3, Epoch: epoch, Marks: []string{"m"}}); err != nil {
		t.Fatal(err)
	}
	if a, ok := Anchor(kr, "db-1"); !ok || a.Counter != 3 || !a.HasMark("m") || !slices.Equal(Anchored(kr), []string{"db-1"}) {
		t.Fatalf("anchor: %+v %v %v", a, ok, Anchored(kr))
	}
	if _, ok := Anchor(kr, "db-2"); ok {
		t.Fatal("an anchor for a database never anchored")
	}
	if err := SetAnchor(ctx, kr, "db-1", keyring.Anchor{Counter: 2, Epoch: epoch}); !errors.Is(err, keyring.ErrAnchorRollback) {
		t.Fatalf("lowering an anchor: %v", err)
	}
	ct, err := kr.Seal([]byte("v"), []byte("ctx"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := KeyIDOf(ct); err != nil || id != kr.Primary().ID || IsSubjectSealed(ct) {
		t.Fatalf("KeyIDOf: %v %v", id, err)
	}
	if _, err := KeyIDOf(ct[:3]); !errors.Is(err, keyring.ErrTruncated) {
		t.Fatalf("KeyIDOf of a truncated value: %v", err)
	}
	kek, err := SubjectKeyFromSecret(keyring.AES256GCM, 7, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SubjectKeyFromSecret(keyring.AES256GCM, 7, make([]byte, 16)); err == nil {
		t.Fatal("a secret of the wrong size was taken")
	}
	sk, err := keyring.NewSubjectKey(keyring.AES256GCM, 9)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := WrapSubjectKeyWith(kek, sk, []byte("users/alice"))
	if v, ok := SubjectKeyVersion(wrapped); !ok || v != 7 || !IsSubjectSealed(wrapped) {
		t.Fatalf("the wrap names version %d %v", v, ok)
	}
	back, err := UnwrapSubjectKeyWith(kek, wrapped, []byte("users/alice"))
	if err != nil || back.Version() != 9 {
		t.Fatalf("unwrap: %v", err)
	}
	if _, err := UnwrapSubjectKeyWith(kek, wrapped, []byte("users/bob")); err == nil {
		t.Fatal("a wrap opened under another subject's context")
	}
}

// TestKeyringSurface: package keyring exports none of the protocol this
// package carries.
func TestKeyringSurface(t *testing.T) {
	internal := []string{"HeaderRoom", "KeyIDOf", "IsSubjectSealed", "SubjectKeyVersion", "WrapSubjectKeyWith", "UnwrapSubjectKeyWith",
		"SubjectKeyFromSecret", "StateMAC", "VerifyStateMAC", "StateEpoch", "Anchored", "SetAnchor"}
	methods := []string{"Anchor"} // the type keyring.Anchor stays: ward ledger shows it
	files, _ := filepath.Glob("../../keyring/*.go")
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		n++
		ast.Inspect(file, func(node ast.Node) bool {
			switch d := node.(type) {
			case *ast.FuncDecl:
				if slices.Contains(internal, d.Name.Name) || (d.Recv != nil && slices.Contains(methods, d.Name.Name)) {
					t.Errorf("%s: keyring exports %s", filepath.Base(f), d.Name.Name)
				}
			case *ast.ValueSpec:
				for _, id := range d.Names {
					if slices.Contains(internal, id.Name) {
						t.Errorf("%s: keyring exports %s", filepath.Base(f), id.Name)
					}
				}
			}
			return true
		})
	}
	if n < 5 {
		t.Fatalf("read %d files of package keyring", n)
	}
}
