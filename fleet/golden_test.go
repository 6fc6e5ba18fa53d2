package fleet

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"testing"
	"time"

	"github.com/wardlab/ward/forms"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/registry-v1.json (only when the registry's MAC changes)")

type goldenRow struct {
	Process Process `json:"process"`
	MAC     string  `json:"mac_hex"`
}

type goldenFile struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Rows      []goldenRow     `json:"rows"`
}

const goldenPath = "testdata/registry-v1.json"

func writeGolden(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	kr, _ := keyring.New(keyring.AES256GCM)
	key, _ := macKey(kr)
	at := time.UnixMilli(1796000000123).UTC()
	f := goldenFile{Comment: "ward process registry rows and their MACs (FORMAT.md, Process registry); regenerate with go test ./fleet -run Golden -update only when the MAC changes", MasterKey: mk.Encode()}
	for _, p := range []Process{
		{ID: "p-0011223344556677", Host: "web-1", PID: 4242, Keyring: kr.ID(), Generation: 3, Keys: []keyring.KeyID{kr.Primary().ID}, Started: at, Seen: at.Add(time.Minute)},
		{ID: "p-8899aabbccddeeff", Host: "web-2", PID: 7, Keyring: kr.ID(), Generation: 3, Keys: []keyring.KeyID{kr.Primary().ID}, Started: at, Seen: at, Exited: true,
			Forms: []forms.Form{"ciphertext:v4", "sealed:notes.body"}},
	} {
		f.Rows = append(f.Rows, goldenRow{p, hex.EncodeToString(mac(key, &p))})
	}
	f.Keyring, _ = kr.Marshal(ctx, mk)
	golden.Write(t, goldenPath, f)
}

// TestGoldenRegistry recomputes the checked-in rows' MACs (one from a
// release before forms, one with forms).
func TestGoldenRegistry(t *testing.T) {
	if *updateGolden {
		writeGolden(t)
	}
	var f goldenFile
	golden.Read(t, goldenPath, &f)
	key, _ := macKey(golden.Keyring(t, f.MasterKey, f.Keyring))
	for _, r := range f.Rows {
		if got := hex.EncodeToString(mac(key, &r.Process)); got != r.MAC {
			t.Errorf("%s: %s, want %s", r.Process.ID, got, r.MAC)
		}
	}
}
