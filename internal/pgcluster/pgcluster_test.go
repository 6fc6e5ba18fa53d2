package pgcluster

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestCluster starts a cluster, uses it (pgcrypto included, which the
// migrate scenario compares against), and stops it.
func TestCluster(t *testing.T) {
	if !Available() {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(ErrNoPostgres)
		}
		t.Skip(ErrNoPostgres)
	}
	c, err := Start(context.Background(), "") // under /tmp: the postgres user must reach it
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	db, err := sql.Open("pgx", c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE EXTENSION IF NOT EXISTS pgcrypto"); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := db.QueryRow("SELECT pgp_sym_decrypt(pgp_sym_encrypt('hi', 'k'), 'k')").Scan(&s); err != nil || s != "hi" {
		t.Fatal(s, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Fatal("folder left behind")
	}
}

// TestStandby makes a streaming standby, sees a write replicate to it,
// then crashes the primary and promotes the standby, which then takes
// writes.
func TestStandby(t *testing.T) {
	ctx := context.Background()
	p, s := PairForTest(t, "ward_standby")
	pdb, sdb := p.OpenForTest(t), s.OpenForTest(t)
	var standby bool
	if err := sdb.QueryRow("SELECT pg_is_in_recovery()").Scan(&standby); err != nil || !standby {
		t.Fatalf("standby: in recovery %v, %v", standby, err)
	}
	var app string
	if err := pdb.QueryRow("SELECT application_name FROM pg_stat_replication").Scan(&app); err != nil || app != "ward_standby" {
		t.Fatalf("primary's replication: %q, %v", app, err)
	}
	if err := p.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := s.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec("CREATE TABLE after_failover (x int)"); err != nil {
		t.Fatal(err)
	}
}
