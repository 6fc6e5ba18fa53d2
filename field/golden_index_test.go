package field

import (
	"encoding/hex"
	"flag"
	"testing"

	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
)

var updateIndexV2 = flag.Bool("update-index-v2", false, "rewrite testdata/blind-index-v2.json (only when the index format changes)")

const goldenIndexV2Path = "testdata/blind-index-v2.json"

// goldenIndexV2File holds v2 blind indexes under two integrity epochs of
// one keyring, bound to Database.
type goldenIndexV2File struct {
	golden.Header
	Database string          `json:"database"`
	Vectors  []goldenIndexV2 `json:"vectors"`
}

type goldenIndexV2 struct {
	Table             string `json:"table"`
	Column            string `json:"column"`
	Name              string `json:"name"`
	Normalizer        string `json:"normalizer"`
	NormalizerVersion uint32 `json:"normalizer_version"`
	Size              int    `json:"size"`
	Epoch             string `json:"epoch"` // 8 hex digits
	Value             string `json:"value_hex"`
	Index             string `json:"index_hex"` // the stored form
}

// indexV2Cases are the indexes the vectors cover: a full and a prefix
// index of one column (each its own key), and a default-form one.
var indexV2Cases = []struct {
	name string
	norm Normalizer
	size int
}{{"email", Fold, 16}, {"email_prefix", Prefix(3, Fold), 8}, {"email_nfc", NFC, 32}}

func writeGoldenIndexV2(t *testing.T) {
	m := golden.NewMaker(t)
	f := goldenIndexV2File{Database: "db-00112233445566778899aabbccddeeff"}
	m.Epochs(t, 2, func(int) {
		for _, c := range indexV2Cases {
			x, err := NewIndex(m.Keyring, "users", "email", IndexOptions{Database: f.Database, Name: c.name, Normalizer: c.norm, Size: c.size})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range blindInputs {
				f.Vectors = append(f.Vectors, goldenIndexV2{"users", "email", c.name, c.norm.Name, c.norm.Version, c.size,
					x.Epoch().String(), hex.EncodeToString([]byte(v)), hex.EncodeToString(x.Compute(v))})
			}
		}
	})
	f.Header = m.Header(t, "ward blind index v2 (FORMAT.md, Blind index): a key per index from the integrity epoch it names, bound to the database; values in hex (one is not UTF-8); regenerate with go test ./field -run GoldenIndexV2 -update-index-v2 only when the format changes")
	golden.Write(t, goldenIndexV2Path, f)
}

// TestGoldenIndexV2 recomputes the checked-in v2 indexes of both epochs
// from their recorded normaliser names, and checks that another database
// indexes each differently.
func TestGoldenIndexV2(t *testing.T) {
	if *updateIndexV2 {
		writeGoldenIndexV2(t)
	}
	var f goldenIndexV2File
	golden.Read(t, goldenIndexV2Path, &f)
	kr := f.Open(t)
	epochs := map[string]bool{}
	for _, v := range f.Vectors {
		norm, err := ParseNormalizer(v.Normalizer, v.NormalizerVersion)
		if err != nil {
			t.Fatal(err)
		}
		epoch, err := keyring.ParseKeyID(v.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		epochs[v.Epoch] = true
		o := IndexOptions{Database: f.Database, Name: v.Name, Normalizer: norm, Size: v.Size, Epoch: epoch}
		x, err := NewIndex(kr, v.Table, v.Column, o)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := hex.DecodeString(v.Value)
		if got := hex.EncodeToString(x.Compute(string(in))); got != v.Index {
			t.Errorf("%s %s %q: %s, want %s", v.Name, v.Epoch, in, got, v.Index)
		}
		o.Database = "db-other"
		other, _ := NewIndex(kr, v.Table, v.Column, o)
		if hex.EncodeToString(other.Compute(string(in))) == v.Index {
			t.Errorf("%s %q: another database computes the same index", v.Name, in)
		}
	}
	if len(epochs) != 2 || len(f.Vectors) != 2*len(indexV2Cases)*len(blindInputs) {
		t.Fatalf("%d vectors under %d epochs", len(f.Vectors), len(epochs))
	}
}
