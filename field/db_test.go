package field

import (
	"database/sql"
	"testing"

	"github.com/wardlab/ward/internal/dbtest"
)

// testDB is a database under test with its dialect.
type testDB struct {
	name    string
	db      *sql.DB
	dialect Dialect
	driver  string
	dsn     string
	blob    string // binary column type
}

// forEachDB runs fn against a fresh SQLite file and, when configured, a
// real PostgreSQL database (internal/dbtest).
func forEachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		dialect, err := ParseDialect(d.Driver)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, testDB{name: d.Name, db: d.DB, dialect: dialect, driver: d.Driver, dsn: d.DSN, blob: d.Blob})
	})
}

func (d testDB) table(t *testing.T, prefix string) string {
	return dbtest.DB{DB: d.db}.Table(t, prefix)
}

func (d testDB) q(s string) string { return d.dialect.Rebind(s) }
