// Package pgtest isolates tests that share the PostgreSQL database named
// by WARD_TEST_POSTGRES_URL: each caller gets a schema of its own, so that
// test packages of several modules, which go test runs at once, never meet
// in a table of the same name.
package pgtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver
)

// Env names the environment variable with the database's URL; .ci/run
// starts a throwaway cluster and sets it.
const Env = "WARD_TEST_POSTGRES_URL"

// URL returns a URL of the test database whose search_path is a fresh
// schema, dropped with everything in it when the test ends; "" when Env is
// not set, and the caller skips PostgreSQL.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		return ""
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer db.Close()
	schema := fmt.Sprintf("ward_test_%d", rand.Uint64())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("pgtest: creating a schema: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", base); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
