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

// Header is what every vector file opens with: what it pins, and the
// keyring that made it with the master key that opens that keyring. A
// file's own type embeds it, so its JSON layout is unchanged.
type Header struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
}

// Open opens the keyring h holds.
func (h *Header) Open(t testing.TB) *keyring.Keyring {
	t.Helper()
	return Keyring(t, h.MasterKey, h.Keyring)
}

// Maker makes a vector file: a fresh AES-256-GCM keyring and the master
// key that will seal it into the file's Header.
type Maker struct {
	// Keyring is the keyring the vectors are made with.
	Keyring *keyring.Keyring
	mk      *local.MasterKey
}

// NewMaker returns a Maker with a fresh keyring and master key.
func NewMaker(t testing.TB) *Maker {
	t.Helper()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return &Maker{Keyring: kr, mk: local.Generate()}
}

// Epochs calls fn once for each of n integrity epochs, promoting a new
// primary key (which starts an epoch) before every call after the first.
func (m *Maker) Epochs(t testing.TB, n int, fn func(epoch int)) {
	t.Helper()
	for epoch := range n {
		if epoch > 0 {
			if _, err := keyring.NewManager(m.Keyring).AddPrimary(context.Background(), keyring.AES256GCM); err != nil {
				t.Fatal(err)
			}
		}
		fn(epoch)
	}
}

// Header returns the file's header: comment, the master key, and the
// keyring as it stands now, sealed with it.
func (m *Maker) Header(t testing.TB, comment string) Header {
	t.Helper()
	file, err := m.Keyring.Marshal(context.Background(), m.mk)
	if err != nil {
		t.Fatal(err)
	}
	return Header{Comment: comment, MasterKey: m.mk.Encode(), Keyring: file}
}
