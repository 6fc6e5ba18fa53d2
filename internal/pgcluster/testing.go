package pgcluster

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver
)

// ForTest starts a cluster for a test, stopped when it ends. Without
// PostgreSQL installed it skips the test, or fails it under WARD_CI
// (.ci/run installs it).
func ForTest(t testing.TB) *Cluster {
	t.Helper()
	if !Available() {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(ErrNoPostgres)
		}
		t.Skip(ErrNoPostgres)
	}
	c, err := Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// PairForTest starts a primary and a streaming standby of it named name,
// both stopped when the test ends (see ForTest).
func PairForTest(t testing.TB, name string) (primary, standby *Cluster) {
	t.Helper()
	p := ForTest(t)
	s, err := p.Standby(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return p, s
}

// OpenForTest opens the cluster with pgx for a test, closed when it ends.
func (c *Cluster) OpenForTest(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", c.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// PoolerForTest starts PgBouncer over hosts for a test (StartPooler),
// stopped when it ends. Without pgbouncer installed it skips the test, or
// fails it under WARD_CI (.ci/run installs it).
func PoolerForTest(t testing.TB, hosts ...*Cluster) *Pooler {
	t.Helper()
	if _, err := pgbouncer(); err != nil {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	p, err := StartPooler(context.Background(), hosts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}
