package wardsqlc_test

import (
	"github.com/wardlab/ward/internal/pgtest"

	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/contrib/sqlc/notesmysql"
	"github.com/wardlab/ward/contrib/sqlc/notespg"
	"github.com/wardlab/ward/contrib/sqlc/notesqlite"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// queries is what the test needs of either generated package.
type queries interface {
	create(ctx context.Context, id string, user int64, body, email field.Ciphertext, idx []byte) error
	get(ctx context.Context, id string) (user int64, body, email field.Ciphertext, err error)
	find(ctx context.Context, idx []byte) (id string, err error)
}

type lite struct{ q *notesqlite.Queries }

func (l lite) create(ctx context.Context, id string, user int64, body, email field.Ciphertext, idx []byte) error {
	return l.q.CreateNote(ctx, notesqlite.CreateNoteParams{ID: id, UserID: user, Body: body, Email: email, EmailIndex: idx})
}
func (l lite) get(ctx context.Context, id string) (int64, field.Ciphertext, field.Ciphertext, error) {
	n, err := l.q.GetNote(ctx, id)
	return n.UserID, n.Body, n.Email, err
}
func (l lite) find(ctx context.Context, idx []byte) (string, error) {
	n, err := l.q.FindByEmail(ctx, idx)
	return n.ID, err
}

type pg struct{ q *notespg.Queries }

func (p pg) create(ctx context.Context, id string, user int64, body, email field.Ciphertext, idx []byte) error {
	return p.q.CreateNote(ctx, notespg.CreateNoteParams{ID: id, UserID: user, Body: body, Email: email, EmailIndex: idx})
}
func (p pg) get(ctx context.Context, id string) (int64, field.Ciphertext, field.Ciphertext, error) {
	n, err := p.q.GetNote(ctx, id)
	return n.UserID, n.Body, n.Email, err
}
func (p pg) find(ctx context.Context, idx []byte) (string, error) {
	n, err := p.q.FindByEmail(ctx, idx)
	return n.ID, err
}

func schema(t *testing.T, db *sql.DB, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("DROP TABLE IF EXISTS notes")
	if _, err := db.Exec(string(b)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS notes") })
}

// postgresDB opens the test cluster's database with the notes schema, or
// skips the test without one.
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	url := pgtest.URL(t)
	if url == "" {
		t.Skip("WARD_TEST_POSTGRES_URL is not set")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema(t, db, "postgres/schema.sql")
	return db
}

func TestSQLC(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	sq, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("sqlite", func(t *testing.T) {
		schema(t, sq, "sqlite/schema.sql")
		run(t, kr, sq, lite{notesqlite.New(sq)})
	})
	t.Run("postgres", func(t *testing.T) {
		db := postgresDB(t)
		run(t, kr, db, pg{notespg.New(db)})
	})
	t.Run("mysql", func(t *testing.T) {
		db := mysqlDB(t)
		run(t, kr, db, my{notesmysql.New(db)})
	})
}

func run(t *testing.T, kr *keyring.Keyring, db *sql.DB, q queries) {
	ctx := context.Background()
	body, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text), field.Bind("user_id"))
	email, _ := field.NewColumn(kr, "notes", "email", field.WithEncoding(field.Text))
	index, _ := field.NewBlindIndex(kr, "notes", "email", field.WithNormalizer(field.NormalizeFold))
	b, _ := body.SealString(field.RowString("n1").With(1), "milk, eggs")
	e, _ := email.SealString(field.RowString("n1"), "Alice@Example.com")
	if err := q.create(ctx, "n1", 1, b, e, index.Compute("Alice@Example.com")); err != nil {
		t.Fatal(err)
	}
	b2, _ := body.SealString(field.RowString("n2").With(2), "")
	if err := q.create(ctx, "n2", 2, b2, field.Ciphertext{}, nil); err != nil { // NULL e-mail
		t.Fatal(err)
	}
	user, bc, ec, err := q.get(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := body.OpenString(field.RowString("n1").With(user), bc); err != nil || s != "milk, eggs" {
		t.Fatalf("body: %q %v", s, err)
	}
	if s, err := email.OpenString(field.RowString("n1"), ec); err != nil || s != "Alice@Example.com" {
		t.Fatalf("email: %q %v", s, err)
	}
	if _, _, ec, _ := q.get(ctx, "n2"); ec.Valid() {
		t.Fatal("NULL e-mail read as a value")
	}
	if id, err := q.find(ctx, index.Compute("alice@EXAMPLE.com")); err != nil || id != "n1" {
		t.Fatalf("blind index: %q %v", id, err)
	}
	db.Exec("UPDATE notes SET user_id = 2 WHERE id = 'n1'")
	user, bc, _, _ = q.get(ctx, "n1")
	if _, err := body.OpenString(field.RowString("n1").With(user), bc); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("re-pointed owner: %v", err)
	}
}
