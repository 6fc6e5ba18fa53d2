package sqltable

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestCommit: a commit that cannot be confirmed is ErrCommitUnknown; one
// that succeeds is not, and calls no notice (integration/topology
// TestInterruptedForget sees the notice of a commit that waits).
func TestCommit(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	var called atomic.Int32
	if err := Commit(WithCommitNotice(ctx, time.Hour, func(time.Duration) { called.Add(1) }), tx); err != nil {
		t.Fatal(err)
	}
	if err := Commit(ctx, tx); !errors.Is(err, ErrCommitUnknown) || !errors.Is(err, sql.ErrTxDone) {
		t.Fatalf("a commit the database did not confirm: %v", err)
	}
	if called.Load() != 0 {
		t.Fatal("a notice for a commit that returned at once")
	}
}
