// Package dbtest runs a test against the databases ward supports: a fresh
// SQLite file always, PostgreSQL when WARD_TEST_POSTGRES_URL is set (.ci/run
// starts a throwaway cluster and sets it), each in a schema of its own
// (package pgtest), and MariaDB when WARD_TEST_MYSQL_URL is set, each in a
// database of its own (package mytest).
package dbtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver
	_ "modernc.org/sqlite"             // the SQLite driver

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
)

// DB is one database under test.
type DB struct {
	Name   string // "sqlite", "postgres" or "mysql"
	DB     *sql.DB
	Driver string // the database/sql driver name
	DSN    string // for sql.Open(Driver, DSN)
	Blob   string // the binary column type
}

// SQLiteDSN is the data source of a SQLite file with a busy timeout, WAL
// and immediate write transactions, as dburl opens it and as the tests that
// run jobs beside writers need.
func SQLiteDSN(path string) string {
	return dburl.SQLiteDSN(path)
}

// ForEach runs fn against a fresh SQLite file and, when configured, a real
// PostgreSQL and a real MariaDB database, as subtests named "sqlite",
// "postgres" and "mysql".
func ForEach(t *testing.T, fn func(t *testing.T, d DB)) {
	t.Run("sqlite", func(t *testing.T) {
		dsn := SQLiteDSN(filepath.Join(t.TempDir(), "test.db"))
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, DB{Name: "sqlite", DB: db, Driver: "sqlite", DSN: dsn, Blob: "BLOB"})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		if url == "" {
			t.Skipf("%s is not set: skipping PostgreSQL (.ci/run starts a throwaway cluster and sets it)", pgtest.Env)
		}
		fn(t, open(t, DB{Name: "postgres", Driver: "pgx", DSN: url, Blob: "BYTEA"}, pgtest.Env))
	})
	t.Run("mysql", func(t *testing.T) {
		url := mytest.URL(t)
		if url == "" {
			t.Skipf("%s is not set: skipping MariaDB (.ci/run starts a throwaway server and sets it)", mytest.Env)
		}
		fn(t, open(t, DB{Name: "mysql", Driver: "mysql", DSN: mytest.DSN(t, url), Blob: "LONGBLOB"}, mytest.Env))
	})
}

// open opens d's server, closed when the test ends, and fails the test if
// the server named by env does not answer.
func open(t *testing.T, d DB, env string) DB {
	t.Helper()
	db, err := sql.Open(d.Driver, d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("%s is set but %s is unreachable: %v", env, d.Name, err)
	}
	t.Cleanup(func() { db.Close() })
	d.DB = db
	return d
}

// Table returns a unique table name, dropped when the test ends.
func (d DB) Table(t *testing.T, prefix string) string {
	name := fmt.Sprintf("%s_%d", prefix, rand.Uint32())
	t.Cleanup(func() { d.DB.Exec("DROP TABLE IF EXISTS " + name) })
	return name
}
