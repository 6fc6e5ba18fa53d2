// Command example is a one-minute tour of ward with sqlc-generated code
// (package notesqlite): seal before the generated insert, open after the
// generated select, on SQLite in a temporary folder.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/contrib/sqlc/notesqlite"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "wardsqlc-example-")
	defer os.RemoveAll(dir)
	kr, err := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "notes.db"))
	if err != nil {
		log.Fatal(err)
	}
	schema, _ := os.ReadFile("sqlite/schema.sql")
	if _, err := db.Exec(string(schema)); err != nil {
		log.Fatal(err)
	}
	q := notesqlite.New(db)
	body, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text), field.Bind("user_id"))

	id := rand.Text()
	ct, _ := body.SealString(field.RowString(id).With(1), "the launch code is in the blue folder")
	if err := q.CreateNote(ctx, notesqlite.CreateNoteParams{ID: id, UserID: 1, Body: ct}); err != nil {
		log.Fatal(err)
	}
	n, _ := q.GetNote(ctx, id)
	stored, _ := n.Body.Value()
	fmt.Printf("the database holds: %.40s…\n", stored)
	text, err := body.OpenString(field.RowString(n.ID).With(n.UserID), n.Body)
	fmt.Printf("decrypted: %q (%v)\n", text, err)

	db.Exec("UPDATE notes SET user_id = 2") // a database writer re-points the note
	n, _ = q.GetNote(ctx, id)
	_, err = body.OpenString(field.RowString(n.ID).With(n.UserID), n.Body)
	fmt.Println("after re-pointing it to another user:", err)
}
