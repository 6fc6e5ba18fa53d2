// Command example is a one-minute tour of wardent: an ent schema (Note,
// in ./ent) whose body is encrypted and bound to its owner, on SQLite in a
// temporary folder.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	entsql "entgo.io/ent/dialect/sql"
	_ "modernc.org/sqlite"

	wardent "github.com/wardlab/ward/contrib/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "wardent-example-")
	defer os.RemoveAll(dir)
	kr, err := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	codec, err := wardent.New(kr, []wardent.Field{{Type: "Note", Table: "notes", Column: "body", Bind: []string{"user_id"}}})
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "notes.db")+"?_pragma=foreign_keys(1)")
	if err != nil {
		log.Fatal(err)
	}
	client := ent.NewClient(ent.Driver(entsql.OpenDB("sqlite3", db)))
	client.Use(codec.Hook())
	client.Intercept(codec.Interceptor())
	if err := client.Schema.Create(ctx); err != nil {
		log.Fatal(err)
	}

	n := client.Note.Create().SetID(rand.Text()).SetUserID(1).SetBody("the launch code is in the blue folder").SaveX(ctx)
	var stored string
	db.QueryRow("SELECT body FROM notes").Scan(&stored)
	fmt.Printf("the database holds: %.40s…\n", stored)
	fmt.Printf("decrypted: %q\n", client.Note.GetX(ctx, n.ID).Body)

	db.Exec("UPDATE notes SET user_id = 2") // a database writer re-points the note
	_, err = client.Note.Get(ctx, n.ID)
	fmt.Println("after re-pointing it to another user:", err)
}
