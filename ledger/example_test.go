package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// A service checks the database's ledger before it uses a keyring, and
// records the primary before sealing under it. A database writer who
// deletes the ledger afterwards does not get a first start: the keyring
// anchors the database.
func ExampleLedger() {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM) // in production: keyring.Load, which saves the anchor in the file
	db, _ := sql.Open("sqlite", ":memory:")
	defer db.Close()
	db.SetMaxOpenConns(1)
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}

	fmt.Println(lg.Check(ctx, kr)) // a first start
	if err := lg.Record(ctx, kr); err != nil {
		log.Fatal(err)
	}
	db.Exec(`DELETE FROM ward_ledger`)
	fmt.Println(errors.Is(lg.Check(ctx, kr), ledger.ErrMissing))
	// Output:
	// <nil>
	// true
}

// A service looks users up by e-mail address without decrypting: a blind
// index v2, recorded in the ledger at first use and computed under that
// epoch after rotations, with a key of its own, bound to the database.
// A second index of the column (by the first three characters) has its
// own name and key, so the two index columns cannot be joined.
func ExampleLedger_Index() {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	db, _ := sql.Open("sqlite", ":memory:")
	defer db.Close()
	db.SetMaxOpenConns(1)
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email BLOB, email_idx BLOB UNIQUE, email_prefix BLOB)`)

	byEmail, err := lg.Index(ctx, kr, ledger.IndexColumn{Table: "users", Column: "email", Index: "email_idx"}, field.Fold)
	if err != nil {
		log.Fatal(err)
	}
	byStart, err := lg.Index(ctx, kr, ledger.IndexColumn{Table: "users", Column: "email", Name: "email_prefix", Index: "email_prefix"}, field.Prefix(3, field.Fold))
	if err != nil {
		log.Fatal(err)
	}
	db.Exec(`INSERT INTO users (id, email_idx, email_prefix) VALUES (1, ?, ?)`, byEmail.Compute("Alice@Example.com"), byStart.Compute("Alice@Example.com"))

	var id int
	db.QueryRow(`SELECT id FROM users WHERE email_idx = ?`, byEmail.Compute(" alice@example.COM")).Scan(&id)
	fmt.Println(id, len(byEmail.Compute("x")))
	var n int
	db.QueryRow(`SELECT count(*) FROM users WHERE email_idx = ?`, byEmail.Compute("ali")).Scan(&n)
	fmt.Println(n)
	// Output:
	// 1 21
	// 0
}
