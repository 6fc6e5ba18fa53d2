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
