package subject_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// Example seals a user's message under the user's own key, then forgets
// the user: the message never opens again, and another user's still does.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ward-example-")
	defer os.RemoveAll(dir)
	kr, _ := keyring.Create(ctx, filepath.Join(dir, "keyring.json"), local.Generate(), keyring.AES256GCM)
	db, _ := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	defer db.Close()
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	lg.Record(ctx, kr)

	users, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: lg, Namespace: "users"})
	if err != nil {
		panic(err)
	}
	body, _ := field.NewColumn(kr, "messages", "body", field.Bind("user_id"), field.PerSubject(users, "user_id"))

	alice, _ := body.SealString(field.RowInt(1).With("alice"), "alice's message")
	bob, _ := body.SealString(field.RowInt(2).With("bob"), "bob's message")

	if err := users.Forget(ctx, "alice"); err != nil {
		panic(err)
	}
	_, err = body.OpenString(field.RowInt(1).With("alice"), alice)
	fmt.Println("alice erased:", errors.Is(err, field.ErrSubjectErased))
	msg, _ := body.OpenString(field.RowInt(2).With("bob"), bob)
	fmt.Println(msg)
	// Output:
	// alice erased: true
	// bob's message
}
