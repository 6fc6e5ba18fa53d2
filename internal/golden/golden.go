// Package golden reads and writes the vector files under testdata/ that
// pin ward's formats (FORMAT.md names each), for the tests of the packages
// that sit above package keyring.
package golden

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// Read reads the vector file at path into v.
func Read(t testing.TB, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Write writes v as the vector file at path, indented, as every vector
// file is (so that a regeneration diffs line by line).
func Write(t testing.TB, path string, v any) {
	t.Helper()
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Keyring opens the keyring file a vector file holds with its master key.
func Keyring(t testing.TB, masterKey string, file json.RawMessage) *keyring.Keyring {
	t.Helper()
	mk, err := local.Parse(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Unmarshal(context.Background(), file, mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}
