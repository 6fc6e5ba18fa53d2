package field

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// PostgresURLEnv names the environment variable with the URL of a
// PostgreSQL database for tests. .ci/run starts a throwaway cluster and
// sets it; without it the PostgreSQL subtests skip.
const PostgresURLEnv = "WARD_TEST_POSTGRES_URL"

type testDB struct {
	name    string
	db      *sql.DB
	dialect Dialect
	driver  string
	dsn     string
	blob    string // binary column type
}

func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}

// forEachDB runs fn against a fresh SQLite file and, when configured, a
// real PostgreSQL database.
func forEachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	t.Run("sqlite", func(t *testing.T) {
		dsn := sqliteDSN(filepath.Join(t.TempDir(), "test.db"))
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, testDB{name: "sqlite", db: db, dialect: SQLite, driver: "sqlite", dsn: dsn, blob: "BLOB"})
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv(PostgresURLEnv)
		if url == "" {
			t.Skipf("%s is not set: skipping PostgreSQL (.ci/run starts a throwaway cluster and sets it)", PostgresURLEnv)
		}
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Ping(); err != nil {
			t.Fatalf("%s is set but PostgreSQL is unreachable: %v", PostgresURLEnv, err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, testDB{name: "postgres", db: db, dialect: Postgres, driver: "pgx", dsn: url, blob: "BYTEA"})
	})
}

// table returns a unique table name, dropped when the test ends.
func (d testDB) table(t *testing.T, prefix string) string {
	name := fmt.Sprintf("%s_%d", prefix, rand.Uint32())
	t.Cleanup(func() { d.db.Exec("DROP TABLE IF EXISTS " + name) })
	return name
}

func (d testDB) q(s string) string { return d.dialect.Rebind(s) }
