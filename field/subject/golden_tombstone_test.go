package subject

import (
	"context"
	"database/sql"
	"flag"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

var updateTombstones = flag.Bool("update-tombstones", false, "write testdata/tombstone-v2.json (only when the tombstone changes version)")

const goldenTombstonesPath = "testdata/tombstone-v2.json"

// tombstoneGolden holds v2 tombstones of one namespace under two
// integrity epochs of a keyring, bound to Database (FORMAT.md, "Subject
// keys", Tombstones).
type tombstoneGolden struct {
	golden.Header
	Database   string            `json:"database"`
	Namespace  string            `json:"namespace"`
	Tombstones []goldenTombstone `json:"tombstones"`
}

// goldenTombstone is one tombstone as a vector file holds it.
type goldenTombstone struct {
	Subject     string `json:"subject"`
	ForgottenAt int64  `json:"forgotten_at"`
	Epoch       int64  `json:"epoch"`
	MAC         string `json:"mac"`
}

func writeTombstoneGolden(t *testing.T, db *sql.DB) {
	m := golden.NewMaker(t)
	g := tombstoneGolden{Database: "db-00112233445566778899aabbccddeeff", Namespace: "users"}
	s := goldenTombstoneStore(t, db, m.Keyring, g.Database, g.Namespace)
	subjects := []string{"carol", "dave"}
	m.Epochs(t, len(subjects), func(i int) {
		at := int64(1767225600000 + i)
		epoch, mac, err := s.tombstoneMAC(g.Database, subjects[i], at)
		if err != nil {
			t.Fatal(err)
		}
		g.Tombstones = append(g.Tombstones, goldenTombstone{subjects[i], at, epoch, mac})
	})
	g.Header = m.Header(t, "ward subject tombstones v2 (FORMAT.md, Subject keys); regenerate with go test ./field/subject -run GoldenTombstones -update-tombstones only when they change")
	golden.Write(t, goldenTombstonesPath, g)
}

func goldenTombstoneStore(t *testing.T, db *sql.DB, kr *keyring.Keyring, database, namespace string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DB: db, Dialect: field.SQLite, Keyring: kr, Namespace: namespace, Verified: &ledger.State{Database: database}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGoldenTombstones verifies the checked-in v2 tombstones of both
// epochs in their database, and refuses each in another database, for
// another subject or time, or under another epoch.
func TestGoldenTombstones(t *testing.T) {
	db, err := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "g.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if *updateTombstones {
		writeTombstoneGolden(t, db)
	}
	ctx := context.Background()
	var g tombstoneGolden
	golden.Read(t, goldenTombstonesPath, &g)
	kr := g.Open(t)
	s := goldenTombstoneStore(t, db, kr, g.Database, g.Namespace)
	other := goldenTombstoneStore(t, db, kr, g.Database+"0", g.Namespace)
	epochs := map[int64]bool{}
	for _, tb := range g.Tombstones {
		epochs[tb.Epoch] = true
		if v, err := s.tombstoneVersion(ctx, tb.Subject, tb.ForgottenAt, tb.Epoch, tb.MAC); err != nil || v != 2 {
			t.Errorf("%s: version %d, %v", tb.Subject, v, err)
		}
		for name, ok := range map[string]bool{
			"another database": other.verifyTombstone(ctx, tb.Subject, tb.ForgottenAt, tb.Epoch, tb.MAC),
			"another subject":  s.verifyTombstone(ctx, tb.Subject+"x", tb.ForgottenAt, tb.Epoch, tb.MAC),
			"another time":     s.verifyTombstone(ctx, tb.Subject, tb.ForgottenAt+1, tb.Epoch, tb.MAC),
			"another epoch":    s.verifyTombstone(ctx, tb.Subject, tb.ForgottenAt, tb.Epoch^1, tb.MAC),
		} {
			if ok {
				t.Errorf("%s: verifies in %s", tb.Subject, name)
			}
		}
	}
	if len(epochs) != 2 {
		t.Fatalf("the vectors name %d epochs, want 2", len(epochs))
	}
}
