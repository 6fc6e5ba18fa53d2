package field_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// The application writes and reads plaintext; the database holds
// ciphertext bound to each row.
func Example() {
	kr, err := keyring.New(keyring.AES256GCM) // in production: keyring.Load
	if err != nil {
		log.Fatal(err)
	}
	body, _ := field.NewColumn(kr, "messages", "body")

	db, _ := sql.Open("sqlite", ":memory:")
	defer db.Close()
	db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY, body BLOB)`)

	ct, _ := body.SealString(field.RowInt(1), "can the operators read this?")
	db.Exec(`INSERT INTO messages (id, body) VALUES (?, ?)`, 1, ct)

	var msg string
	err = db.QueryRow(`SELECT body FROM messages WHERE id = ?`, 1).Scan(body.Scanner(field.RowInt(1), &msg))
	fmt.Println(msg, err)

	var raw []byte
	db.QueryRow(`SELECT body FROM messages WHERE id = 1`).Scan(&raw)
	fmt.Println("stored bytes:", len(raw), "version", raw[0])
	// Output:
	// can the operators read this? <nil>
	// stored bytes: 67 version 4
}

// Scan many rows into Ciphertext, then open each with its row key.
func ExampleColumn_Open() {
	kr, _ := keyring.New(keyring.AES256GCM)
	body, _ := field.NewColumn(kr, "messages", "body")
	db, _ := sql.Open("sqlite", ":memory:")
	defer db.Close()
	db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY, body BLOB)`)
	for i, m := range []string{"hello", "", "world"} {
		ct, _ := body.SealString(field.RowInt(int64(i)), m)
		db.Exec(`INSERT INTO messages VALUES (?, ?)`, i, ct)
	}
	db.Exec(`INSERT INTO messages VALUES (3, NULL)`)

	rows, _ := db.Query(`SELECT id, body FROM messages ORDER BY id`)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		rows.Scan(&id, &ct)
		s, err := body.OpenNullString(field.RowInt(id), ct)
		fmt.Printf("%d %q valid=%v err=%v\n", id, s.String, s.Valid, err)
	}
	// Output:
	// 0 "hello" valid=true err=<nil>
	// 1 "" valid=true err=<nil>
	// 2 "world" valid=true err=<nil>
	// 3 "" valid=false err=<nil>
}

// A ciphertext copied to another row does not open.
func ExampleColumn_Open_wrongRow() {
	kr, _ := keyring.New(keyring.AES256GCM)
	body, _ := field.NewColumn(kr, "messages", "body")
	ct, _ := body.SealString(field.RowInt(1), "secret")
	_, err := body.Open(field.RowInt(2), ct)
	fmt.Println(err)
	// Output:
	// field: messages.body row 2: keyring: ciphertext belongs to another context or is damaged
}

// Equality search without decryption.
func ExampleBlindIndex() {
	kr, _ := keyring.New(keyring.AES256GCM)
	email, _ := field.NewBlindIndex(kr, "users", "email", field.WithNormalizer(field.NormalizeFold))
	db, _ := sql.Open("sqlite", ":memory:")
	defer db.Close()
	db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email BLOB, email_idx BLOB)`)
	db.Exec(`CREATE INDEX users_email_idx ON users (email_idx)`)
	db.Exec(`INSERT INTO users (id, email_idx) VALUES (1, ?), (2, ?)`,
		email.Compute("alice@example.com"), email.Compute("bob@example.com"))

	var id int
	db.QueryRow(`SELECT id FROM users WHERE email_idx = ?`, email.Compute(" Bob@Example.COM")).Scan(&id)
	fmt.Println(id)
	// Output: 2
}

// An analytics job reads note titles with a grant, and nothing else: the
// operator issues the grant (ward grant --scope notes.title), sealed under
// the job's own key.
func ExampleGrantColumn() {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	titles, _ := field.NewColumn(kr, "notes", "title")
	bodies, _ := field.NewColumn(kr, "notes", "body")
	title, _ := titles.SealString(field.RowInt(1), "groceries")
	body, _ := bodies.SealString(field.RowInt(1), "milk, eggs")

	jobKey := local.Generate()
	g, _ := kr.Grant([]keyring.GrantScope{{Table: "notes", Column: "title"}})
	file, _ := g.Marshal(ctx, jobKey) // what the job is given

	granted, _ := keyring.UnmarshalGrant(ctx, file, jobKey)
	reader, _ := field.GrantColumn(granted, "notes", "title")
	s, err := reader.OpenString(field.RowInt(1), title)
	fmt.Println(s, err)
	_, err = reader.OpenString(field.RowInt(1), body) // a body presented as a title

	fmt.Println(errors.Is(err, keyring.ErrWrongContext))
	// Output:
	// groceries <nil>
	// true
}
