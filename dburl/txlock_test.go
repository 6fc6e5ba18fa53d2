package dburl

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLiteWriteTransactionBesideAWriter: a transaction that reads and
// then writes succeeds though another connection committed a write after
// its read. In a deferred SQLite transaction that write fails with
// SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out (a chat sign-up
// beside a fleet heartbeat got a 500 so); transactions therefore begin
// IMMEDIATE, taking the write lock first and waiting for it.
func TestSQLiteWriteTransactionBesideAWriter(t *testing.T) {
	ctx := context.Background()
	db, _, err := Open("sqlite:" + filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	go func() { _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1)`); other <- err }()
	// Give the other writer its chance to commit first (a deferred
	// transaction lets it, then fails below); an immediate one holds it off.
	var otherErr error
	select {
	case otherErr = <-other:
		other = nil
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatalf("write after a read, beside a writer: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if other != nil {
		otherErr = <-other
	}
	if otherErr != nil {
		t.Fatalf("the other writer: %v", otherErr)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows: %d %v", n, err)
	}
}
