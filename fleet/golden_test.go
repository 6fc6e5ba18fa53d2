package fleet

import (
	"encoding/hex"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/registry-v1.json (only when the registry's MAC changes)")

type goldenRow struct {
	Process Process `json:"process"`
	MAC     string  `json:"mac_hex"`
}

type goldenFile struct {
	golden.Header
	Rows []goldenRow `json:"rows"`
}

const goldenPath = "testdata/registry-v1.json"

func writeGolden(t *testing.T) {
	m := golden.NewMaker(t)
	kr := m.Keyring
	key, _ := kr.Derive("fleet registry v1", 32)
	at := time.UnixMilli(1796000000123).UTC()
	var f goldenFile
	for _, p := range []Process{
		{ID: "p-0011223344556677", Host: "web-1", PID: 4242, Keyring: kr.ID(), Generation: 3, Keys: []keyring.KeyID{kr.Primary().ID}, Started: at, Seen: at.Add(time.Minute)},
		{ID: "p-8899aabbccddeeff", Host: "web-2", PID: 7, Keyring: kr.ID(), Generation: 3, Keys: []keyring.KeyID{kr.Primary().ID}, Started: at, Seen: at, Exited: true,
			Forms: []fleetgate.Form{"ciphertext:v4", "sealed:notes.body"}},
	} {
		f.Rows = append(f.Rows, goldenRow{p, hex.EncodeToString(rowMAC(key, &p))})
	}
	f.Header = m.Header(t, "ward process registry rows and their MACs (FORMAT.md, Process registry); regenerate with go test ./fleet -run Golden -update only when the MAC changes")
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
	key, _ := f.Open(t).Derive("fleet registry v1", 32)
	for _, r := range f.Rows {
		if got := hex.EncodeToString(rowMAC(key, &r.Process)); got != r.MAC {
			t.Errorf("%s: %s, want %s", r.Process.ID, got, r.MAC)
		}
	}
}

var updateV2 = flag.Bool("update-v2", false, "write testdata/registry-v2.json (only when the row MAC changes version)")

const goldenV2Path = "testdata/registry-v2.json"

type goldenV2File struct {
	golden.Header
	Database string      `json:"database"`
	Rows     []goldenRow `json:"rows"`
}

func writeGoldenV2(t *testing.T) {
	mk := golden.NewMaker(t)
	kr := mk.Keyring
	f := goldenV2File{Database: "db-0123456789abcdef"}
	m := &rowMACs{kr: kr, database: f.Database}
	at := time.UnixMilli(1796000000123).UTC()
	p := Process{ID: "p-0011223344556677", Host: "web-1", PID: 4242, Keyring: kr.ID(), Generation: 3, Keys: []keyring.KeyID{kr.Primary().ID}, Started: at, Seen: at.Add(time.Minute),
		Forms: []fleetgate.Form{"ciphertext:v4", "integrity:v2"}}
	f.Rows = append(f.Rows, goldenRow{p, m.tag(&p, nil)})
	f.Header = mk.Header(t, "ward process registry rows v2 (FORMAT.md, Process registry); regenerate with go test ./fleet -run GoldenRegistryV2 -update-v2 only when the MAC changes")
	golden.Write(t, goldenV2Path, f)
}

// TestGoldenRegistryV2 recomputes the v2 rows' MACs (FORMAT.md: bound to
// the database, under the epoch they name), and refuses them under
// another database.
func TestGoldenRegistryV2(t *testing.T) {
	if *updateV2 {
		writeGoldenV2(t)
	}
	var f goldenV2File
	golden.Read(t, goldenV2Path, &f)
	kr := f.Open(t)
	m := &rowMACs{kr: kr, database: f.Database}
	other := &rowMACs{kr: kr, database: "db-fedcba9876543210"}
	for _, r := range f.Rows {
		if !strings.HasPrefix(r.MAC, "v2:") || !m.verify(&r.Process, r.MAC) {
			t.Errorf("%s: %s does not verify", r.Process.ID, r.MAC)
		}
		if got := m.tag(&r.Process, nil); got != r.MAC {
			t.Errorf("%s: %s, want %s", r.Process.ID, got, r.MAC)
		}
		if other.verify(&r.Process, r.MAC) {
			t.Errorf("%s: the row verifies under another database", r.Process.ID)
		}
	}
}
