package wardsqlc_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/wardlab/ward/contrib/sqlc/notesmysql"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/mytest"
)

// my adapts notesmysql, whose VARBINARY blind index sqlc types as
// sql.NullString (the bytes unchanged).
type my struct{ q *notesmysql.Queries }

func index(idx []byte) sql.NullString { return sql.NullString{String: string(idx), Valid: idx != nil} }

func (m my) create(ctx context.Context, id string, user int64, body, email field.Ciphertext, idx []byte) error {
	return m.q.CreateNote(ctx, notesmysql.CreateNoteParams{ID: id, UserID: user, Body: body, Email: email, EmailIndex: index(idx)})
}
func (m my) get(ctx context.Context, id string) (int64, field.Ciphertext, field.Ciphertext, error) {
	n, err := m.q.GetNote(ctx, id)
	return n.UserID, n.Body, n.Email, err
}
func (m my) find(ctx context.Context, idx []byte) (string, error) {
	n, err := m.q.FindByEmail(ctx, index(idx))
	return n.ID, err
}
func (m my) updateBody(ctx context.Context, id string, b field.Ciphertext) error {
	return m.q.UpdateBody(ctx, notesmysql.UpdateBodyParams{Body: b, ID: id})
}
func (m my) updateOwner(ctx context.Context, id string, u int64) error {
	return m.q.UpdateOwner(ctx, notesmysql.UpdateOwnerParams{UserID: u, ID: id})
}
func (m my) updateOwnerAndBody(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return m.q.UpdateOwnerAndBody(ctx, notesmysql.UpdateOwnerAndBodyParams{UserID: u, Body: b, ID: id})
}
func (m my) upsert(ctx context.Context, id string, u int64, b field.Ciphertext) error {
	return m.q.UpsertNote(ctx, notesmysql.UpsertNoteParams{ID: id, UserID: u, Body: b})
}
func (m my) updateEmail(ctx context.Context, id string, e field.Ciphertext, idx []byte) error {
	return m.q.UpdateEmail(ctx, notesmysql.UpdateEmailParams{Email: e, EmailIndex: index(idx), ID: id})
}
func (m my) withTx(tx *sql.Tx) writes { return my{m.q.WithTx(tx)} }

// mysqlDB opens a fresh MariaDB database with the notes schema, or skips
// the test without one.
func mysqlDB(t *testing.T) *sql.DB {
	t.Helper()
	url := mytest.URL(t)
	if url == "" {
		t.Skipf("%s is not set", mytest.Env)
	}
	db, err := sql.Open("mysql", mytest.DSN(t, url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema(t, db, "mysql/schema.sql")
	return db
}
