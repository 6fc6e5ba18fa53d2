package wardsqlc_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"

	"github.com/wardlab/ward/contrib/sqlc/notesmysql"
	"github.com/wardlab/ward/contrib/sqlc/notespg"
	"github.com/wardlab/ward/contrib/sqlc/notesqlite"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// writes is every write query of either generated package.
type writes interface {
	queries
	updateBody(ctx context.Context, id string, body field.Ciphertext) error
	updateOwner(ctx context.Context, id string, user int64) error
	updateOwnerAndBody(ctx context.Context, id string, user int64, body field.Ciphertext) error
	upsert(ctx context.Context, id string, user int64, body field.Ciphertext) error
	updateEmail(ctx context.Context, id string, email field.Ciphertext, idx []byte) error
	withTx(tx *sql.Tx) writes
}

func (l lite) updateBody(ctx context.Context, id string, b field.Ciphertext) error {
	return l.q.UpdateBody(ctx, notesqlite.UpdateBodyParams{Body: b, ID: id})
}
func (l lite) updateOwner(ctx context.Context, id string, u int64) error {
	return l.q.UpdateOwner(ctx, notesqlite.UpdateOwnerParams{UserID: u, ID: id})
}
func (l lite) updateOwnerAndBody(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return l.q.UpdateOwnerAndBody(ctx, notesqlite.UpdateOwnerAndBodyParams{UserID: u, Body: b, ID: id})
}
func (l lite) upsert(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return l.q.UpsertNote(ctx, notesqlite.UpsertNoteParams{ID: id, UserID: u, Body: b})
}
func (l lite) updateEmail(ctx context.Context, id string, e field.Ciphertext, idx []byte) error {
	return l.q.UpdateEmail(ctx, notesqlite.UpdateEmailParams{Email: e, EmailIndex: idx, ID: id})
}
func (l lite) withTx(tx *sql.Tx) writes { return lite{l.q.WithTx(tx)} }

func (p pg) updateBody(ctx context.Context, id string, b field.Ciphertext) error {
	return p.q.UpdateBody(ctx, notespg.UpdateBodyParams{Body: b, ID: id})
}
func (p pg) updateOwner(ctx context.Context, id string, u int64) error {
	return p.q.UpdateOwner(ctx, notespg.UpdateOwnerParams{UserID: u, ID: id})
}
func (p pg) updateOwnerAndBody(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return p.q.UpdateOwnerAndBody(ctx, notespg.UpdateOwnerAndBodyParams{UserID: u, Body: b, ID: id})
}
func (p pg) upsert(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return p.q.UpsertNote(ctx, notespg.UpsertNoteParams{ID: id, UserID: u, Body: b})
}
func (p pg) updateEmail(ctx context.Context, id string, e field.Ciphertext, idx []byte) error {
	return p.q.UpdateEmail(ctx, notespg.UpdateEmailParams{Email: e, EmailIndex: idx, ID: id})
}
func (p pg) withTx(tx *sql.Tx) writes { return pg{p.q.WithTx(tx)} }

// TestWriteMatrix drives every write query sqlc generates here, on SQLite,
// PostgreSQL and MariaDB (docs/ADOPTING.md lists the cells): each stores a value
// sealed for its row and owner, except a generated owner change alone and
// raw SQL, which are not intercepted — what they leave fails to open
// instead of being shown.
func TestWriteMatrix(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	t.Run("sqlite", func(t *testing.T) {
		db, err := sql.Open("sqlite", t.TempDir()+"/m.db")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		schema(t, db, "sqlite/schema.sql")
		matrix(t, kr, db, lite{notesqlite.New(db)}, "?")
	})
	t.Run("postgres", func(t *testing.T) {
		db := postgresDB(t)
		matrix(t, kr, db, pg{notespg.New(db)}, "$1")
	})
	t.Run("mysql", func(t *testing.T) {
		db := mysqlDB(t)
		matrix(t, kr, db, my{notesmysql.New(db)}, "?")
	})
}

func matrix(t *testing.T, kr *keyring.Keyring, db *sql.DB, q writes, ph string) {
	ctx := context.Background()
	body, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text), field.Bind("user_id"))
	email, _ := field.NewColumn(kr, "notes", "email", field.WithEncoding(field.Text))
	index, _ := field.NewBlindIndex(kr, "notes", "email", field.WithNormalizer(field.NormalizeFold))
	seal := func(id string, user int64, s string) field.Ciphertext {
		ct, err := body.SealString(field.RowString(id).With(user), s)
		if err != nil {
			t.Fatal(err)
		}
		return ct.AsText()
	}
	opens := func(cell, id, want string) {
		t.Helper()
		user, ct, _, err := q.get(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", cell, err)
		}
		if got, err := body.OpenString(field.RowString(id).With(user), ct); err != nil || got != want {
			t.Fatalf("%s: %q, %v", cell, got, err)
		}
	}

	// create (struct params)
	if err := q.create(ctx, "a", 1, seal("a", 1, "created"), field.Ciphertext{}, nil); err != nil {
		t.Fatal(err)
	}
	opens("create", "a", "created")
	// bulk create: sqlc generates no multi-row insert for database/sql;
	// the generated insert in one transaction
	tx, _ := db.BeginTx(ctx, nil)
	for i, id := range []string{"b1", "b2", "b3"} {
		if err := q.withTx(tx).create(ctx, id, int64(i), seal(id, int64(i), "bulk "+id), field.Ciphertext{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b1", "b2", "b3"} {
		opens("bulk create", id, "bulk "+id)
	}
	// update column and value
	if err := q.updateBody(ctx, "a", seal("a", 1, "updated")); err != nil {
		t.Fatal(err)
	}
	opens("update", "a", "updated")
	// upsert: insert, then conflict
	if err := q.upsert(ctx, "u", 5, seal("u", 5, "inserted")); err != nil {
		t.Fatal(err)
	}
	opens("upsert insert", "u", "inserted")
	if err := q.upsert(ctx, "u", 6, seal("u", 6, "upserted")); err != nil {
		t.Fatal(err)
	}
	opens("upsert conflict", "u", "upserted")
	// owner change with the value re-sealed for the new owner
	if err := q.updateOwnerAndBody(ctx, "a", 2, seal("a", 2, "moved")); err != nil {
		t.Fatal(err)
	}
	opens("owner and body", "a", "moved")
	// e-mail and its blind index in one statement
	e, _ := email.SealString(field.RowString("a"), "New@Example.com")
	if err := q.updateEmail(ctx, "a", e.AsText(), index.Compute("New@Example.com")); err != nil {
		t.Fatal(err)
	}
	if id, err := q.find(ctx, index.Compute("new@example.COM")); err != nil || id != "a" {
		t.Fatalf("search after the e-mail update: %q %v", id, err)
	}
	// Not intercepted: a generated owner change alone leaves the value
	// bound to the old owner; it fails to open, no other owner reads it.
	if err := q.updateOwner(ctx, "b1", 9); err != nil {
		t.Fatal(err)
	}
	user, ct, _, _ := q.get(ctx, "b1")
	if _, err := body.OpenString(field.RowString("b1").With(user), ct); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("owner alone: %v", err)
	}
	// Not intercepted: raw SQL writing plaintext; it fails to open.
	if _, err := db.ExecContext(ctx, "UPDATE notes SET body = 'plain' WHERE id = "+ph, "b2"); err != nil {
		t.Fatal(err)
	}
	user, ct, _, _ = q.get(ctx, "b2")
	if _, err := body.OpenString(field.RowString("b2").With(user), ct); !errors.Is(err, field.ErrPlaintext) {
		t.Fatalf("raw SQL: %v", err)
	}
}

// TestSealedTypes: every generated parameter and row of an encrypted
// column is a field.Ciphertext, so plaintext does not compile: the typed
// guard the sqlc.yaml overrides give.
func TestSealedTypes(t *testing.T) {
	ct := reflect.TypeFor[field.Ciphertext]()
	for _, v := range []any{notesqlite.CreateNoteParams{}, notesqlite.UpdateBodyParams{}, notesqlite.UpdateOwnerAndBodyParams{}, notesqlite.UpsertNoteParams{},
		notesqlite.UpdateEmailParams{}, notesqlite.GetNoteRow{}, notesqlite.FindByEmailRow{},
		notespg.CreateNoteParams{}, notespg.UpdateBodyParams{}, notespg.UpdateOwnerAndBodyParams{}, notespg.UpsertNoteParams{},
		notespg.UpdateEmailParams{}, notespg.GetNoteRow{}, notespg.FindByEmailRow{},
		notesmysql.CreateNoteParams{}, notesmysql.UpdateBodyParams{}, notesmysql.UpdateOwnerAndBodyParams{}, notesmysql.UpsertNoteParams{},
		notesmysql.UpdateEmailParams{}, notesmysql.GetNoteRow{}, notesmysql.FindByEmailRow{}} {
		rt := reflect.TypeOf(v)
		n := 0
		for _, name := range []string{"Body", "Email"} {
			if f, ok := rt.FieldByName(name); ok {
				n++
				if f.Type != ct {
					t.Errorf("%v.%s is %v, not field.Ciphertext", rt, name, f.Type)
				}
			}
		}
		if n == 0 {
			t.Errorf("%v has no encrypted column", rt)
		}
	}
}
