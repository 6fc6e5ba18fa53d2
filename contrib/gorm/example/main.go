// Command example is a one-minute tour of wardgorm: a notes table whose
// body is encrypted and bound to its owner, an e-mail searchable through a
// blind index, on SQLite (pure Go) in a temporary folder.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	wardgorm "github.com/wardlab/ward/contrib/gorm"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// Note's ID is assigned by the application (not the database), so the
// body can be bound to it before the row is inserted.
type Note struct {
	ID         string `gorm:"primaryKey"`
	UserID     int64
	Body       string `gorm:"serializer:ward" ward:"bind:UserID"`
	Email      string `gorm:"serializer:ward"`
	EmailIndex []byte `gorm:"serializer:ward-index;type:bytes;index" ward:"of:Email"`
}

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "wardgorm-example-")
	defer os.RemoveAll(dir)

	// A keyring sealed under a master key (keep both safe in real life).
	kr, err := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	ward := wardgorm.Register(kr)

	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "notes.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.AutoMigrate(&Note{}); err != nil {
		log.Fatal(err)
	}
	// The write guard: map updates (Update, Updates(map), UpdateColumn,
	// Create(map)) are sealed for their row or refused, never written as
	// plaintext.
	if err := ward.Guard(db, &Note{}); err != nil {
		log.Fatal(err)
	}
	note := Note{ID: rand.Text(), UserID: 1, Body: "the launch code is in the blue folder", Email: "alice@example.com"}
	if err := db.Create(&note).Error; err != nil {
		log.Fatal(err)
	}

	var stored string
	db.Raw("SELECT body FROM notes").Scan(&stored)
	fmt.Printf("the database holds: %.40s…\n", stored)

	idx, _ := ward.Index("notes", "email", "ALICE@example.com")
	var n Note
	if err := db.Where("email_index = ?", idx).First(&n).Error; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("found by e-mail, decrypted: %q\n", n.Body)

	db.Exec("UPDATE notes SET user_id = 2") // a database writer re-points the note
	fmt.Println("after re-pointing it to another user:", db.First(&n).Error)
}
