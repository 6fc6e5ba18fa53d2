package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/pgcluster"
	"github.com/wardlab/ward/ledger"
)

// TestReplicationSummary: what a service says at start, for each topology.
func TestReplicationSummary(t *testing.T) {
	for _, tc := range []struct {
		r         ledger.Replication
		journaled bool
		warn      bool
		says      string
	}{
		{ledger.Replication{Postgres: true}, false, true, "forgets in the commits a failover or restore loses come back"},
		{ledger.Replication{Postgres: true}, true, false, "forget journal"},
		{ledger.Replication{Postgres: true, SynchronousStandbyNames: "s1", Replicas: map[string]string{"s1": "sync"}}, false, false, "loses none"},
		// Configured, but no standby streams as synchronous: not durable.
		{ledger.Replication{Postgres: true, SynchronousStandbyNames: "s1", Replicas: map[string]string{"s1": "async"}}, false, true, "come back"},
		{ledger.Replication{Postgres: true, Standby: true}, true, true, "standby"},
		{ledger.Replication{}, false, true, "SQLite"},
		{ledger.Replication{MySQL: true}, false, true, "MySQL/MariaDB without Galera and no forget journal"},
		{ledger.Replication{MySQL: true}, true, false, "forget journal"},
		{ledger.Replication{MySQL: true, Galera: true}, false, false, "Galera cluster"},
		{ledger.Replication{}, true, false, "forget journal"},
	} {
		line, warn := tc.r.Summary(tc.journaled)
		if warn != tc.warn || !strings.Contains(line, tc.says) {
			t.Errorf("%+v journaled %v: %q warn %v", tc.r, tc.journaled, line, warn)
		}
	}
}

// TestInspectReplicationSQLite: SQLite has no replication to read.
func TestInspectReplicationSQLite(t *testing.T) {
	db, err := sql.Open("sqlite", t.TempDir()+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := ledger.InspectReplication(context.Background(), db, field.SQLite)
	if err != nil || r.Postgres || r.Synchronous() {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestInspectReplicationMySQL: a MariaDB server that is no Galera node reads as
// MySQL, not Galera, and never as SQLite.
func TestInspectReplicationMySQL(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		if d.Name != "mysql" {
			t.Skip("MySQL and MariaDB")
		}
		r, err := ledger.InspectReplication(context.Background(), d.DB, field.MySQL)
		line, _ := r.Summary(false)
		if err != nil || !r.MySQL || r.Galera || r.Postgres || strings.Contains(line, "SQLite") {
			t.Fatalf("%+v %q %v", r, line, err)
		}
	})
}

// TestReplicationStandby: on a primary with a synchronous standby InspectReplication reports
// it; on the standby, Standby; WaitReplayed waits for a paused replica
// and ends with ErrNotReplayed, returns once it replays, and refuses a
// server that is no standby.
func TestReplicationStandby(t *testing.T) {
	ctx := context.Background()
	p, s := pgcluster.PairForTest(t, "s1")
	pdb, sdb := p.OpenForTest(t), s.OpenForTest(t)
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = 's1'`, `SELECT pg_reload_conf()`} {
		if _, err := pdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var r ledger.Replication
	var err error
	for range 100 {
		if r, err = ledger.InspectReplication(ctx, pdb, field.Postgres); err == nil && r.Synchronous() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !r.Synchronous() || r.Standby || r.Replicas["s1"] != "sync" {
		t.Fatalf("primary: %+v %v", r, err)
	}
	if r, err := ledger.InspectReplication(ctx, sdb, field.Postgres); err != nil || !r.Standby {
		t.Fatalf("standby: %+v %v", r, err)
	}
	if err := ledger.WaitReplayed(ctx, pdb, sdb, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Asynchronous again, replay paused, one more write: the replica lags.
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = ''`, `SELECT pg_reload_conf()`} {
		if _, err := pdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sdb.Exec(`SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	if _, err := pdb.Exec(`CREATE TABLE lag (x int)`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := ledger.WaitReplayed(wctx, pdb, sdb, 10*time.Millisecond); !errors.Is(err, ledger.ErrNotReplayed) {
		t.Fatalf("a paused replica: %v", err)
	}
	if _, err := sdb.Exec(`SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	if err := ledger.WaitReplayed(ctx, pdb, sdb, 10*time.Millisecond); err != nil {
		t.Fatalf("a resumed replica: %v", err)
	}
	if err := ledger.WaitReplayed(ctx, pdb, pdb, 0); err == nil || !strings.Contains(err.Error(), "not a standby") {
		t.Fatalf("the primary as its own replica: %v", err)
	}
}
