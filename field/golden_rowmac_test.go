package field

import (
	"encoding/hex"
	"flag"
	"testing"

	"github.com/wardlab/ward/internal/golden"
)

var updateRowMAC = flag.Bool("update-rowmac", false, "rewrite testdata/row-mac-v1.json (only when the row MAC changes version)")

type goldenRowMAC struct {
	Table   string    `json:"table"`
	Columns []string  `json:"columns"`
	Values  []*string `json:"values"` // text, or null for SQL NULL
	MAC     string    `json:"mac_hex"`
}

type goldenRowMACFile struct {
	golden.Header
	Vectors []goldenRowMAC `json:"vectors"`
}

const goldenRowMACPath = "testdata/row-mac-v1.json"

func strp(s string) *string { return &s }

func rowMACArgs(vs []*string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

func writeGoldenRowMAC(t *testing.T) {
	m := golden.NewMaker(t)
	kr := m.Keyring
	var f goldenRowMACFile
	for _, v := range []goldenRowMAC{
		{Table: "sessions", Columns: []string{"user_id"}, Values: []*string{strp("42")}},
		{Table: "users", Columns: []string{"id", "password"}, Values: []*string{strp("7"), strp("$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA")}},
		{Table: "users", Columns: []string{"id", "password"}, Values: []*string{strp("8"), nil}},
	} {
		m, err := NewRowMAC(kr, v.Table, v.Columns...)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := m.Sum(rowMACArgs(v.Values)...)
		if err != nil {
			t.Fatal(err)
		}
		v.MAC = hex.EncodeToString(sum)
		f.Vectors = append(f.Vectors, v)
	}
	f.Header = m.Header(t, "ward row MAC (FORMAT.md, Row MAC); regenerate with go test ./field -run GoldenRowMAC -update-rowmac only when it changes")
	golden.Write(t, goldenRowMACPath, f)
}

// TestGoldenRowMAC recomputes and verifies the checked-in row MACs, and
// refuses each with a value changed.
func TestGoldenRowMAC(t *testing.T) {
	if *updateRowMAC {
		writeGoldenRowMAC(t)
	}
	var f goldenRowMACFile
	golden.Read(t, goldenRowMACPath, &f)
	kr := f.Open(t)
	for _, v := range f.Vectors {
		m, _ := NewRowMAC(kr, v.Table, v.Columns...)
		tag, _ := hex.DecodeString(v.MAC)
		if err := m.Verify(tag, rowMACArgs(v.Values)...); err != nil {
			t.Errorf("%s %v: %v", v.Table, v.Columns, err)
		}
		if err := m.Verify(tag, append(rowMACArgs(v.Values[:len(v.Values)-1]), "changed")...); err == nil {
			t.Errorf("%s %v: a changed value verified", v.Table, v.Columns)
		}
	}
}

var updateRowMACv2 = flag.Bool("update-rowmac-v2", false, "rewrite testdata/row-mac-v2.json (only when the row MAC changes version)")

const goldenRowMACv2Path = "testdata/row-mac-v2.json"

// goldenRowMACv2File holds v2 MACs under two integrity epochs of one
// keyring, each bound to Database.
type goldenRowMACv2File struct {
	golden.Header
	Database string           `json:"database"`
	Vectors  []goldenRowMACv2 `json:"vectors"`
}

type goldenRowMACv2 struct {
	goldenRowMAC
	Epoch string `json:"epoch"` // the integrity epoch, 8 hex digits
}

func writeGoldenRowMACv2(t *testing.T) {
	m := golden.NewMaker(t)
	f := goldenRowMACv2File{Database: "db-00112233445566778899aabbccddeeff"}
	vectors := []goldenRowMAC{
		{Table: "sessions", Columns: []string{"token_hash", "user_id", "expires"}, Values: []*string{strp("abc"), strp("42"), strp("1767225600")}},
		{Table: "users", Columns: []string{"id", "password"}, Values: []*string{strp("8"), nil}},
	}
	m.Epochs(t, 2, func(int) {
		for _, v := range vectors {
			mac, err := NewRowMACFor(m.Keyring, v.Table, v.Columns, RowMACOptions{Database: f.Database})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := mac.Sum(rowMACArgs(v.Values)...)
			if err != nil {
				t.Fatal(err)
			}
			v.MAC = hex.EncodeToString(sum)
			f.Vectors = append(f.Vectors, goldenRowMACv2{goldenRowMAC: v, Epoch: m.Keyring.Primary().ID.String()})
		}
	})
	f.Header = m.Header(t, "ward row MAC v2 (FORMAT.md, Row MAC): bound to the database, under the integrity epoch it names; regenerate with go test ./field -run GoldenRowMACv2 -update-rowmac-v2 only when it changes")
	golden.Write(t, goldenRowMACv2Path, f)
}

// TestGoldenRowMACv2 verifies the checked-in v2 row MACs of both epochs,
// and refuses each with a value changed or bound to another database.
func TestGoldenRowMACv2(t *testing.T) {
	if *updateRowMACv2 {
		writeGoldenRowMACv2(t)
	}
	var f goldenRowMACv2File
	golden.Read(t, goldenRowMACv2Path, &f)
	kr := f.Open(t)
	epochs := map[string]bool{}
	for _, v := range f.Vectors {
		epochs[v.Epoch] = true
		tag, _ := hex.DecodeString(v.MAC)
		if got, ok := RowMACEpoch(tag); !ok || got.String() != v.Epoch {
			t.Errorf("%s: epoch %v, want %s", v.Table, got, v.Epoch)
		}
		m, _ := NewRowMACFor(kr, v.Table, v.Columns, RowMACOptions{Database: f.Database})
		if err := m.Verify(tag, rowMACArgs(v.Values)...); err != nil {
			t.Errorf("%s %v (epoch %s): %v", v.Table, v.Columns, v.Epoch, err)
		}
		if err := m.Verify(tag, append(rowMACArgs(v.Values[:len(v.Values)-1]), "changed")...); err == nil {
			t.Errorf("%s %v: a changed value verified", v.Table, v.Columns)
		}
		other, _ := NewRowMACFor(kr, v.Table, v.Columns, RowMACOptions{Database: f.Database + "0"})
		if err := other.Verify(tag, rowMACArgs(v.Values)...); err == nil {
			t.Errorf("%s %v: verified in another database", v.Table, v.Columns)
		}
	}
	if len(epochs) != 2 {
		t.Fatalf("the vectors name %d epochs, want 2", len(epochs))
	}
}
