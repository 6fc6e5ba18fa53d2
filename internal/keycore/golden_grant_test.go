package keycore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

var updateGrant = flag.Bool("update-grant", false, "rewrite testdata/grant-v1.json (only when the grant format changes version)")

// goldenGrantValue is a value a grant's holder meets: Opens says whether
// the grant opens it, Error (when it does not) names the refusal.
type goldenGrantValue struct {
	Table      string `json:"table"`
	Column     string `json:"column"`
	Context    string `json:"context_hex"`
	Plaintext  string `json:"plaintext"`
	Ciphertext string `json:"ciphertext_hex"`
	Opens      bool   `json:"opens"`
	Error      string `json:"error,omitempty"`
}

type goldenGrantFile struct {
	Comment         string             `json:"comment"`
	MasterKey       string             `json:"master_key"`
	Keyring         json.RawMessage    `json:"keyring"`
	ReaderMasterKey string             `json:"reader_master_key"`
	Grant           json.RawMessage    `json:"grant"`
	Values          []goldenGrantValue `json:"values"`
}

const goldenGrantPath = "../../keyring/testdata/grant-v1.json"

// writeGoldenGrant writes a keyring of two keys, a grant of notes.title
// sealed under a reader's master key, and values the grant opens (v4 of
// the title under either key) and must refuse (the body, v3 titles).
func writeGoldenGrant(t *testing.T) {
	ctx := context.Background()
	mk, reader := local.Generate(), local.Generate()
	kr, _ := New(AES256GCM)
	old := kr.Primary().ID
	kr.Rotate(ctx, XChaCha20Poly1305)
	g, err := kr.Grant([]GrantScope{{Table: "notes", Column: "title"}}, old, kr.Primary().ID)
	if err != nil {
		t.Fatal(err)
	}
	f := goldenGrantFile{Comment: "ward grant file v1 (FORMAT.md, Grant file v1) and what it opens; regenerate with go test ./keyring -run GoldenGrant -update-grant only when the format changes", MasterKey: mk.Encode(), ReaderMasterKey: reader.Encode()}
	row := "\x00\x0242"
	add := func(table, column string, v3 bool, pt string, opens bool, e string) {
		var ct []byte
		if v3 {
			ct, _ = kr.Seal([]byte(pt), []byte(row))
		} else {
			ct, _ = kr.Scope(FieldScope(table, column)).Seal([]byte(pt), []byte(row))
		}
		f.Values = append(f.Values, goldenGrantValue{table, column, hex.EncodeToString([]byte(row)), pt, hex.EncodeToString(ct), opens, e})
	}
	add("notes", "title", false, "a title under the newer key", true, "")
	add("notes", "body", false, "a body: not granted", false, "wrong-context")
	add("notes", "title", true, "a v3 value: not granted", false, "not-granted")
	if f.Grant, err = g.Marshal(ctx, reader); err != nil {
		t.Fatal(err)
	}
	f.Keyring, _ = kr.Marshal(ctx, mk)
	out, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(goldenGrantPath, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenGrant opens the checked-in grant with the reader's key and
// checks what it opens and refuses, and that the keyring's own key
// service cannot open it.
func TestGoldenGrant(t *testing.T) {
	skipV3Sealing(t)
	if *updateGrant {
		writeGoldenGrant(t)
	}
	ctx := context.Background()
	raw, err := os.ReadFile(goldenGrantPath)
	if err != nil {
		t.Fatal(err)
	}
	var f goldenGrantFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	mk, _ := local.Parse(f.MasterKey)
	reader, _ := local.Parse(f.ReaderMasterKey)
	kr, err := Unmarshal(ctx, f.Keyring, mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalGrant(ctx, f.Grant, mk); !errors.Is(err, ErrWrongWrapper) {
		t.Fatalf("the keyring's master key opened the reader's grant: %v", err)
	}
	g, err := UnmarshalGrant(ctx, f.Grant, reader)
	if err != nil {
		t.Fatal(err)
	}
	if g.Keyring() != kr.ID() || len(g.Keys()) != 2 {
		t.Fatalf("grant of %s with keys %v", g.Keyring(), g.Keys())
	}
	sc, err := g.Scope("notes", "title")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range f.Values {
		ct, _ := hex.DecodeString(v.Ciphertext)
		c, _ := hex.DecodeString(v.Context)
		pt, err := sc.Open(ct, c)
		if v.Opens != (err == nil) || (err == nil && string(pt) != v.Plaintext) {
			t.Errorf("%s.%s: opens %v, got %q, %v", v.Table, v.Column, v.Opens, pt, err)
		}
		want, _ := kr.Open(ct, c) // the keyring opens v3 and the empty scope only
		if v.Error == "not-granted" && string(want) != v.Plaintext {
			t.Errorf("the v3 vector does not open with the keyring")
		}
	}
}
