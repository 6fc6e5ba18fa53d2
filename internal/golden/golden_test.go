package golden

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestRoundTrip: a file written by Write reads back with Read, and its
// keyring opens with Keyring.
func TestRoundTrip(t *testing.T) {
	mk := local.Generate()
	kr, _ := keyring.New(keyring.AES256GCM)
	file, err := kr.Marshal(context.Background(), mk)
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		MasterKey string          `json:"master_key"`
		Keyring   json.RawMessage `json:"keyring"`
	}
	path := filepath.Join(t.TempDir(), "v.json")
	Write(t, path, doc{mk.Encode(), file})
	var back doc
	Read(t, path, &back)
	if got := Keyring(t, back.MasterKey, back.Keyring); got.ID() != kr.ID() {
		t.Fatalf("keyring %s, want %s", got.ID(), kr.ID())
	}
}
