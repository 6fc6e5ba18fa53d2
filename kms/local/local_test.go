package local

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms"
)

func TestParse(t *testing.T) {
	mk := Generate()
	back, err := Parse(" " + mk.Encode() + "\n")
	if err != nil || back.Key() != mk.Key() {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("A", 40)} {
		if _, err := Parse(bad); !errors.Is(err, ErrBadKey) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	weak := [][]byte{make([]byte, 32), bytes.Repeat([]byte{0xff}, 32), bytes.Repeat([]byte("0123"), 8), []byte("passwordpasswordpasswordpassword")}
	for _, w := range weak {
		if _, err := Parse(base64.StdEncoding.EncodeToString(w)); !errors.Is(err, ErrWeakKey) {
			t.Fatalf("%q: %v", w, err)
		}
	}
	env := func(string) string { return mk.Encode() }
	if got, err := Load("", env); err != nil || got.Key() != mk.Key() {
		t.Fatal(err)
	}
	if _, err := Load("", func(string) string { return "" }); !errors.Is(err, ErrNoKey) {
		t.Fatal("no master key accepted")
	}
	if _, err := Load("/nonexistent/mk", nil); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestPrintsNoSecret(t *testing.T) {
	mk := Generate()
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
		if s := fmt.Sprintf(f, mk); strings.Contains(s, mk.Encode()) || strings.Contains(s, fmt.Sprintf("%x", mk.key[:4])) || !strings.Contains(s, mk.id) {
			t.Fatalf("%s: %q", f, s)
		}
	}
}

func TestWrap(t *testing.T) {
	ctx := context.Background()
	mk := Generate()
	ec := map[string]string{"a": "b"}
	ct, _ := mk.Encrypt(ctx, []byte("k"), ec)
	if pt, err := mk.Decrypt(ctx, ct, ec); err != nil || string(pt) != "k" {
		t.Fatal(err)
	}
	if _, err := mk.Decrypt(ctx, ct, nil); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Fatal(err)
	}
	if _, err := mk.Decrypt(ctx, ct[:5], ec); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Fatal(err)
	}
	mk.Destroy()
	if _, err := mk.Decrypt(ctx, ct, ec); err == nil {
		t.Fatal("destroyed key still decrypts")
	}
}

// TestLoadPathInVariable: WARD_MASTER_KEY set to a file's path (a common
// slip: it holds the key itself) is refused with a hint that says so.
func TestLoadPathInVariable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "master.key")
	os.WriteFile(file, []byte(Generate().Encode()), 0o600)
	for _, v := range []string{file, "master.key", "./mk"} {
		_, err := Load("", func(string) string { return v })
		if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "holds a file path, not the key") {
			t.Errorf("%s=%s: %v", EnvVar, v, err)
		}
	}
	if _, err := Load("", func(string) string { return "bm90IGEga2V5" }); !errors.Is(err, ErrBadKey) || strings.Contains(err.Error(), "file path") {
		t.Errorf("a bad key that is no path: %v", err)
	}
}
