// Package pgtest isolates tests that share the PostgreSQL server named by
// WARD_TEST_POSTGRES_URL: each caller gets a schema of its own (a
// database of its own through a pooler), so that test packages of several
// modules, which go test runs at once, never meet in a table of the same
// name.
package pgtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver
)

// Env names the environment variable with the database's URL; .ci/run
// starts a throwaway cluster and sets it.
const Env = "WARD_TEST_POSTGRES_URL"

// PooledEnv, when set, says that Env's URL reaches the server through a
// pooler in transaction mode (PgBouncer): it refuses a search_path
// start-up parameter and keeps no session state, so each caller gets a
// database of its own instead of a schema. .ci/run sets it for its
// second run of the PostgreSQL suites, through PgBouncer.
const PooledEnv = "WARD_TEST_POSTGRES_POOLED"

// URL returns a URL of a fresh place in the test server, dropped with
// everything in it when the test ends: a schema named by the URL's
// search_path, or through a pooler a database of its own. It returns ""
// when Env is not set, and the caller skips PostgreSQL.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		return ""
	}
	name := fmt.Sprintf("ward_test_%d", rand.Uint64())
	if os.Getenv(PooledEnv) != "" {
		return database(t, base, name)
	}
	exec(t, base, "CREATE SCHEMA "+name)
	t.Cleanup(func() { exec(nil, base, "DROP SCHEMA "+name+" CASCADE") })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + name
}

// database creates a database and returns base with its name.
func database(t testing.TB, base, name string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL: %v", Env, err)
	}
	exec(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { exec(nil, base, "DROP DATABASE "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// exec runs a statement on base; with a nil t, failures are ignored (a
// cleanup).
func exec(t testing.TB, base, stmt string) {
	db, err := sql.Open("pgx", base)
	if err == nil {
		defer db.Close()
		_, err = db.Exec(stmt)
	}
	if err != nil && t != nil {
		t.Fatalf("pgtest: %s: %v", stmt, err)
	}
}
