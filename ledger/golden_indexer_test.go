package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

var updateIndexerGolden = flag.Bool("update-indexer", false, "rewrite testdata/indexer-v1.json (only when the ledger's index record changes)")

// indexerGolden is testdata/indexer-v1.json: what a process in another
// language starts from to follow a blind index's re-key with the Go CLI's
// 'ward keyring reindex' — a keyring file, and a SQLite database's ledger
// recording the sealed column users.email (row key id) and its blind index
// with a spare column (email_idx, email_idx2), as a Go process's
// Ledger.Indexer records it at its first use.
type indexerGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Schema    string          `json:"schema"`
	Ledger    struct {
		Counter int64  `json:"counter"`
		Body    string `json:"body"`
		MAC     string `json:"mac"`
	} `json:"ledger"`
}

const indexerSchema = `CREATE TABLE users (id INTEGER PRIMARY KEY, email BLOB, email_idx BLOB UNIQUE, email_idx2 BLOB UNIQUE)`

var indexerSpec = IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}

func writeIndexerGolden(t *testing.T, path string) {
	ctx := context.Background()
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db"))
	defer db.Close()
	if _, err := db.Exec(indexerSchema); err != nil {
		t.Fatal(err)
	}
	lg := &Ledger{DB: db, Dialect: field.SQLite}
	col, err := field.NewColumn(kr, "users", "email")
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.RecordColumns(ctx, kr, ColumnOf(col, "id")); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Indexer(ctx, kr, indexerSpec, field.Fold, IndexerOptions{}); err != nil {
		t.Fatal(err)
	}
	g := indexerGolden{Comment: "a ledger recording users.email and its re-keyable blind index (Ledger.Indexer, fold, 16 bytes); regenerate with go test ./ledger -run GoldenIndexer -update-indexer only when the record changes",
		MasterKey: mk.Encode(), Schema: indexerSchema}
	if err := db.QueryRow(`SELECT counter, body, mac FROM ward_ledger WHERE id = 1`).Scan(&g.Ledger.Counter, &g.Ledger.Body, &g.Ledger.MAC); err != nil {
		t.Fatal(err)
	}
	if g.Keyring, err = kr.Marshal(ctx, mk); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(g, "", "  ")
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenIndexer puts the checked-in ledger into a fresh database: it
// verifies under the keyring, and Ledger.Indexer finds the index recorded
// as the vector says, under the keyring's one epoch, with its spare column.
func TestGoldenIndexer(t *testing.T) {
	const path = "testdata/indexer-v1.json"
	if *updateIndexerGolden {
		writeIndexerGolden(t, path)
	}
	ctx := context.Background()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g indexerGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	kr := goldenKeyring(t, g.MasterKey, g.Keyring)
	db, _ := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db"))
	defer db.Close()
	for _, q := range []string{g.Schema, `CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)`, g.Ledger.Counter, g.Ledger.Body, g.Ledger.MAC); err != nil {
		t.Fatal(err)
	}
	lg := &Ledger{DB: db, Dialect: field.SQLite}
	x, err := lg.Indexer(ctx, kr, indexerSpec, field.Fold, IndexerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := x.Record()
	if rec.Epoch != kr.Primary().ID || rec.Spare != "email_idx2" || rec.Size != 16 || rec.Normalizer != "fold" || rec.Rekey != nil {
		t.Fatalf("the vector's index: %+v", rec)
	}
	if st, err := lg.Verified(ctx, kr); err != nil || len(st.Columns) != 1 || st.Columns[0].Key != "id" {
		t.Fatalf("the vector's columns: %+v %v", st, err)
	}
}
