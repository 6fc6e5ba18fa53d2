package lifecycle_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// An application's admin job rotates the keyring across its fleet and
// retires the old key, from its own code: Rotate waits for every process
// registered in the database (none here) before promoting, then re-seals
// the columns the ledger records.
func ExampleRotate() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ward-example")
	defer os.RemoveAll(dir)
	kr, err := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	db, _ := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body BLOB)`)
	notes, _ := field.NewColumn(kr, "notes", "body")
	app := lifecycle.Database{Name: "app", DB: db, Dialect: field.SQLite}
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	l.Record(ctx, kr)
	l.RecordColumns(ctx, kr, ledger.ColumnOf(notes, "id"))
	ct, _ := notes.Seal(field.RowInt(1), []byte("hello"))
	db.Exec(`INSERT INTO notes VALUES (1, ?)`, ct)

	old := kr.Primary().ID
	r, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{app}, lifecycle.RotateOptions{Wait: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("re-sealed:", r.Columns[0].Stats.Resealed)
	kept, err := lifecycle.Retire(ctx, kr, []lifecycle.Database{app}, old)
	fmt.Println("retire:", len(kept), err)
	// Output:
	// re-sealed: 1
	// retire: 0 <nil>
}
