// Command adopt runs the adoption guide (docs/ADOPTING.md) on a temporary
// SQLite database seeded with a plaintext users table, printing each step.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/examples/adopt"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ward-adopt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := adopt.Seed(ctx, db, field.SQLite, 1000); err != nil {
		log.Fatal(err)
	}
	fmt.Println("seeded: users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT UNIQUE, name) with 1,000 plaintext addresses")
	kr, err := keyring.New(keyring.AES256GCM) // in production: keyring.Load (ward keyring new)
	if err != nil {
		log.Fatal(err)
	}
	if err := adopt.Run(ctx, db, field.SQLite, kr, os.Stdout); err != nil {
		log.Fatal(err)
	}
}
