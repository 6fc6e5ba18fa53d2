package keyring_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/wardlab/ward/keyring"
)

// TestTextForms: the text forms every reader decodes and every one it
// refuses, from the vector file Python reads too
// (keyring/testdata/text-forms.json): nothing is trimmed, no character
// outside unpadded base64url is skipped (Go's decoder would skip CR and LF).
func TestTextForms(t *testing.T) {
	raw, err := os.ReadFile("testdata/text-forms.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Valid []struct {
			Text, Hex string
		}
		Malformed []struct {
			Why, Text string
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, v := range file.Valid {
		b, err := keyring.DecodeText(v.Text)
		if err != nil || hex.EncodeToString(b) != v.Hex {
			t.Errorf("%q: %x %v", v.Text, b, err)
		}
	}
	for _, m := range file.Malformed {
		if b, err := keyring.DecodeText(m.Text); err == nil {
			t.Errorf("%s: %q decoded to %x", m.Why, m.Text, b)
		}
	}
	if len(file.Valid) == 0 || len(file.Malformed) == 0 {
		t.Fatal("an empty vector file")
	}
}
