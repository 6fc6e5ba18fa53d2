package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// testDB is a database under test with its dialect.
type testDB struct {
	db      *sql.DB
	dialect field.Dialect
}

// forEachDB runs fn against a fresh SQLite file and, when configured, a
// real PostgreSQL database (internal/dbtest).
func forEachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		dialect, err := field.ParseDialect(d.Driver)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, testDB{db: d.DB, dialect: dialect})
	})
}

func (d testDB) table(t *testing.T, prefix string) string {
	return dbtest.DB{DB: d.db}.Table(t, prefix)
}

func (d testDB) q(s string) string { return d.dialect.Rebind(s) }

// goldenKeyring opens a golden file's keyring under its master key.
func goldenKeyring(t *testing.T, masterKey string, file json.RawMessage) *keyring.Keyring {
	t.Helper()
	mk, err := local.Parse(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Unmarshal(context.Background(), file, mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}
