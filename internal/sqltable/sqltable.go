// Package sqltable creates ward's own bookkeeping tables (the ledger, the
// fleet registry, the job lock, the subject key store) when several
// processes may start at once on the same database, and reads their text
// columns within bounds ([Bound]), since a database writer controls them.
//
// CREATE TABLE IF NOT EXISTS alone is not enough there. On PostgreSQL all
// but one of several concurrent creators fail (a unique violation in the
// catalog) although the table then exists. On a fresh SQLite file, before
// the first write has put it in WAL mode, a creator that already holds a
// read lock gets SQLITE_BUSY at once instead of waiting out the busy
// timeout, because waiting could deadlock; the table appears a moment
// later. Create therefore checks for the table after a failure and retries
// a bounded number of times.
package sqltable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Attempts is how often Create tries before it gives up; the waits between
// tries double from FirstWait, 155 ms in all.
const (
	Attempts  = 6
	FirstWait = 5 * time.Millisecond
)

// testHookRetry, if set by a test, runs before each wait for a retry.
var testHookRetry func()

// Create runs ddl, a CREATE TABLE IF NOT EXISTS statement for table (an
// identifier already quoted for SQL), until the table exists. After a
// failed ddl it probes the table: if the probe succeeds another process
// created it, and Create returns nil. Otherwise it waits and tries again,
// Attempts times in all, and returns the first error ddl gave, wrapped
// with the attempt count. It returns ctx's error if ctx ends while waiting.
func Create(ctx context.Context, db *sql.DB, table, ddl string) error {
	var first error
	wait := FirstWait
	for attempt := 1; ; attempt++ {
		_, err := db.ExecContext(ctx, ddl)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		if _, perr := db.ExecContext(ctx, "SELECT 1 FROM "+table+" WHERE 1 = 0"); perr == nil {
			return nil
		}
		if attempt == Attempts {
			return fmt.Errorf("%w (table %s, %d attempts)", first, table, attempt)
		}
		if testHookRetry != nil {
			testHookRetry()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retrying table %s after: %v)", ctx.Err(), table, first)
		case <-t.C:
		}
		wait *= 2
	}
}

// Missing reports whether err is a database's "no such table" (SQLite) or
// undefined_table (PostgreSQL, SQLSTATE 42P01): a read of one of ward's
// tables before anything created it, which is no state rather than a
// failure. Reads use it so that they never create a table.
func Missing(err error) bool {
	var pg interface{ SQLState() string } // pgx's *pgconn.PgError, without importing a driver
	if errors.As(err, &pg) {
		return pg.SQLState() == "42P01"
	}
	return err != nil && strings.Contains(err.Error(), "no such table")
}
