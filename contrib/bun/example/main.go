// Command example is a one-minute tour of wardbun: a notes table whose
// body is encrypted and bound to its owner, on SQLite in a temporary
// folder.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

var codec *wardbun.Codec

// Note's ID is assigned by the application, so the body can be bound to it
// before the row is inserted.
type Note struct {
	bun.BaseModel `bun:"table:notes"`
	ID            string `bun:",pk"`
	UserID        int64
	Body          wardbun.Text `bun:"type:text" ward:"bind:user_id"`
}

func (n *Note) BeforeAppendModel(ctx context.Context, q bun.Query) error {
	return codec.Seal(ctx, q, n)
}
func (n *Note) AfterScanRow(ctx context.Context) error { return codec.Open(ctx, n) }

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "wardbun-example-")
	defer os.RemoveAll(dir)
	kr, err := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	sqldb, err := sql.Open("sqlite", filepath.Join(dir, "notes.db"))
	if err != nil {
		log.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	codec = wardbun.New(db, kr)
	if _, err := db.NewCreateTable().Model((*Note)(nil)).Exec(ctx); err != nil {
		log.Fatal(err)
	}
	note := &Note{ID: rand.Text(), UserID: 1, Body: wardbun.NewText("the launch code is in the blue folder")}
	if _, err := db.NewInsert().Model(note).Exec(ctx); err != nil {
		log.Fatal(err)
	}
	var stored string
	db.NewRaw("SELECT body FROM notes").Scan(ctx, &stored)
	fmt.Printf("the database holds: %.40s…\n", stored)

	var n Note
	if err := db.NewSelect().Model(&n).Where("id = ?", note.ID).Scan(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("decrypted: %q\n", n.Body)

	db.NewRaw("UPDATE notes SET user_id = 2").Exec(ctx) // a database writer re-points the note
	fmt.Println("after re-pointing it to another user:", db.NewSelect().Model(&Note{}).Where("id = ?", note.ID).Scan(ctx))
}
