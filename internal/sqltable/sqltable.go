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
	"sync/atomic"
	"time"
)

// The engines, as field.Dialect's String names them: functions here take
// the name, since the field package depends on this one.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
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

// Missing reports whether err is a database's "no such table" (SQLite),
// undefined_table (PostgreSQL, SQLSTATE 42P01) or ER_NO_SUCH_TABLE (MySQL,
// error 1146): a read of one of ward's tables before anything created it,
// which is no state rather than a failure. Reads use it so that they never
// create a table.
func Missing(err error) bool {
	var pg interface{ SQLState() string } // pgx's *pgconn.PgError, without importing a driver
	if errors.As(err, &pg) {
		return pg.SQLState() == "42P01"
	}
	if n, ok := mysqlNumber(err); ok {
		return n == 1146
	}
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// ErrStandby means a connection reaches a PostgreSQL standby
// (pg_is_in_recovery() is true). ward's own tables decide security
// questions, and a standby's copy of them lags the primary's (a forgotten
// user's key still there, a ledger older than its anchor), so ward reads
// and writes them on the primary only.
var ErrStandby = errors.New("ward's own tables (ledger, fleet registry, subject keys and tombstones, job lock) are read and written on the primary only, and this PostgreSQL server is a standby (pg_is_in_recovery() is true): point ward at the primary; an application may read ciphertexts from replicas (docs/OPERATIONS.md, \"Replicas\")")

// ErrReadOnly means a connection reaches a MySQL or MariaDB server that
// is read-only (@@read_only is on), as an asynchronous replica is: its copy
// of ward's tables lags the primary's, so ward uses the primary only.
var ErrReadOnly = errors.New("ward's own tables (ledger, fleet registry, subject keys and tombstones, job lock) are read and written on the primary only, and this MySQL/MariaDB server is read-only (@@read_only is on, as on a replica): point ward at the primary; an application may read ciphertexts from replicas (docs/OPERATIONS.md, \"Replicas\")")

// ErrNoCausalReads means a connection reaches a node of a Galera cluster
// whose reads do not wait for what other nodes committed: without
// wsrep_sync_wait, a read there can miss a forget or a ledger record
// another node acknowledged (150 of 2,000 reads were stale in a test), and
// ward's tables decide security questions.
var ErrNoCausalReads = errors.New("ward's own tables must be read causally on a Galera cluster, and this node's reads do not wait for the other nodes' commits (@@wsrep_sync_wait lacks bit 1): add wsrep_sync_wait=1 to the URL (mysql://…?wsrep_sync_wait=1) or set it in the servers' configuration (docs/OPERATIONS.md, \"Galera\")")

// RequirePrimary returns an error matching ErrStandby when db reaches a
// PostgreSQL standby, ErrReadOnly a read-only MySQL server (a replica),
// ErrNoCausalReads a Galera node whose connection reads without waiting
// for the cluster, or ErrNotStrict a MySQL server or session whose
// sql_mode would cut an overlong value short ([RequireStrict]); SQLite has
// none of these. engine is field.Dialect's
// String.
func RequirePrimary(ctx context.Context, db *sql.DB, engine string) error {
	if engine == MySQL {
		if err := causalReads(ctx, db); err != nil {
			return err
		}
		if err := RequireStrict(ctx, db, engine); err != nil {
			return err
		}
	}
	var q string
	var refused error
	switch engine {
	case Postgres:
		q, refused = "SELECT pg_is_in_recovery()", ErrStandby
	case MySQL:
		q, refused = "SELECT @@read_only <> 0", ErrReadOnly
	default:
		return nil
	}
	var standby bool
	if err := db.QueryRowContext(ctx, q).Scan(&standby); err != nil {
		return fmt.Errorf("asking whether the server is a standby: %w", err)
	}
	if standby {
		return refused
	}
	return nil
}

// causalReads refuses a Galera node (wsrep_on) whose session reads
// without wsrep_sync_wait's bit 1. A server without the variable (MySQL)
// is no Galera node.
func causalReads(ctx context.Context, db *sql.DB) error {
	on, wait, err := Galera(ctx, db)
	if err != nil {
		return err
	}
	if on && wait&1 == 0 {
		return ErrNoCausalReads
	}
	return nil
}

// Galera reports whether a MySQL or MariaDB connection reaches a node of
// a Galera cluster (@@wsrep_on), and its session's @@wsrep_sync_wait. A
// server without the variables (MySQL itself) is no node.
func Galera(ctx context.Context, db *sql.DB) (on bool, syncWait int64, err error) {
	var n int64
	err = db.QueryRowContext(ctx, "SELECT @@wsrep_on, @@wsrep_sync_wait").Scan(&n, &syncWait)
	if code, ok := mysqlNumber(err); ok && code == 1193 { // unknown system variable
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("asking whether the server is a Galera node: %w", err)
	}
	return n != 0, syncWait, nil
}

// PrimaryOnce remembers that a database was found to be a primary, so
// that a Ledger or Registry asks once: a server does not become a standby
// without a restart, which a long-lived pool of a failed-over address
// meets as broken connections.
type PrimaryOnce struct{ ok atomic.Bool }

// Check is RequirePrimary, asked until it once succeeds.
func (p *PrimaryOnce) Check(ctx context.Context, db *sql.DB, engine string) error {
	if p.ok.Load() {
		return nil
	}
	if err := RequirePrimary(ctx, db, engine); err != nil {
		return err
	}
	p.ok.Store(true)
	return nil
}

// Inherit takes what o found: a copy of a Ledger working in a caller's
// transaction asks nothing its original already knows.
func (p *PrimaryOnce) Inherit(o *PrimaryOnce) {
	if o.ok.Load() {
		p.ok.Store(true)
	}
}

// Durable makes tx's commit wait until every synchronous standby has
// applied it (SET LOCAL synchronous_commit = remote_apply), so that what
// ward acknowledges (a forget, a ledger record, going private) survives a
// failover to one of them, and a read there sees it. Without
// synchronous_standby_names the server commits as with "on": locally
// durable, even where the server's own default is "off". On SQLite and
// MySQL it does nothing: a Galera cluster certifies a commit on every node
// before it returns, and an asynchronous replica is never read
// (RequirePrimary).
func Durable(ctx context.Context, tx *sql.Tx, engine string) error {
	if engine != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = remote_apply"); err != nil {
		return fmt.Errorf("asking for a durable commit: %w", err)
	}
	return nil
}
