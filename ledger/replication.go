// What a database's replication gives ward's promises, so that a service
// can state it when it starts, and a wait for a replica to replay the
// primary's writes.
//
// ward's consistency model (docs/OPERATIONS.md): ward's own tables are
// read and written on the primary only (a standby is refused). What ward
// acknowledges — a forget, a ledger record, going private — is durable
// before it is acknowledged when the primary has synchronous standbys:
// ward's own transactions then commit with synchronous_commit =
// remote_apply, so a failover to one of them loses none of it. With
// asynchronous replication (or none, and a restore from backup) a
// failover can lose the last commits: forgets are then kept by a forget
// journal outside the database (package forgetlog) and re-applied by the
// recovery ('ward ledger recover'); without one, forgets in a lost tail
// come back.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
)

// Replication is what a database's replication settings give ward.
type Replication struct {
	// Postgres is true for PostgreSQL; false for SQLite, which has no
	// replication (a restore from backup is its only way back in time),
	// and for MySQL and MariaDB (MySQL).
	Postgres bool
	// MySQL is true for MySQL and MariaDB; Galera, for a node of a Galera
	// cluster (@@wsrep_on), whose commits every node certifies before
	// they return.
	MySQL, Galera bool
	// Standby is true on a PostgreSQL standby (pg_is_in_recovery()).
	Standby bool
	// SynchronousStandbyNames is the primary's synchronous_standby_names;
	// empty means no commit waits for a standby.
	SynchronousStandbyNames string
	// Replicas are the standbys streaming from this server that the
	// connection's role may see (pg_stat_replication), by
	// application_name, with their sync_state ("async", "sync", ...).
	Replicas map[string]string
}

// Synchronous reports whether ward's acknowledged writes survive a
// failover to a standby: synchronous standbys are configured and at least
// one is streaming as one.
func (r Replication) Synchronous() bool {
	if r.SynchronousStandbyNames == "" {
		return false
	}
	for _, state := range r.Replicas {
		if state == "sync" || state == "quorum" {
			return true
		}
	}
	return false
}

// InspectReplication reads the server's replication settings.
func InspectReplication(ctx context.Context, db *sql.DB, dialect field.Dialect) (Replication, error) {
	r := Replication{Postgres: dialect == field.Postgres, MySQL: dialect == field.MySQL}
	if r.MySQL {
		return r, inspectMySQL(ctx, db, &r)
	}
	if !r.Postgres {
		return r, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names')`).Scan(&r.Standby, &r.SynchronousStandbyNames); err != nil {
		return r, fmt.Errorf("ledger: replication: reading the server's settings: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT coalesce(application_name, ''), coalesce(sync_state, '') FROM pg_stat_replication`)
	if err != nil {
		return r, fmt.Errorf("ledger: replication: reading pg_stat_replication: %w", err)
	}
	defer rows.Close()
	r.Replicas = map[string]string{}
	for rows.Next() {
		var name, state string
		if err := rows.Scan(&name, &state); err != nil {
			return r, fmt.Errorf("ledger: replication: reading pg_stat_replication: %w", err)
		}
		r.Replicas[name] = state
	}
	return r, rows.Err()
}

// inspectMySQL reads whether a MySQL or MariaDB server is a Galera node.
func inspectMySQL(ctx context.Context, db *sql.DB, r *Replication) error {
	on, _, err := sqltable.Galera(ctx, db)
	if err != nil {
		return fmt.Errorf("ledger: replication: %w", err)
	}
	r.Galera = on
	return nil
}

// Summary states, in a line for a service's start, what the database's
// replication gives ward's promises; journaled says whether forgets are
// also kept in a forget journal. warn is true when forgets can come back
// after a failover or restore.
func (r Replication) Summary(journaled bool) (line string, warn bool) {
	switch {
	case r.Standby:
		return "the database is a standby: ward refuses its own tables there (point it at the primary)", true
	case r.Synchronous():
		return fmt.Sprintf("synchronous standbys (%s): ward's writes wait until one has applied them; a failover to it loses none", r.SynchronousStandbyNames), false
	case r.Galera:
		return "Galera cluster: every node certifies a commit before it returns, so losing a node loses none of ward's writes; a restore from backup still can (a forget journal keeps forgets through one)", false
	case journaled:
		return r.topology() + ": a failover or restore can lose the last commits; forgets are also kept in the forget journal, which 'ward ledger recover' re-applies", false
	case r.Postgres:
		return "no synchronous standby and no forget journal: forgets in the commits a failover or restore loses come back (SECURITY.md; docs/OPERATIONS.md)", true
	case r.MySQL:
		return "MySQL/MariaDB without Galera and no forget journal: forgets in the commits a failover to an asynchronous replica or a restore loses come back (SECURITY.md; docs/OPERATIONS.md)", true
	}
	return "SQLite: no replication; forgets lost with a restore from backup come back unless a forget journal keeps them (docs/OPERATIONS.md)", !journaled
}

// topology names the replication a summary speaks of.
func (r Replication) topology() string {
	switch {
	case r.Postgres:
		return "no synchronous standby"
	case r.MySQL:
		return "MySQL/MariaDB without Galera"
	}
	return "SQLite: no replication"
}

// ErrNotReplayed means a replica had not replayed the primary's writes
// when the wait ended.
var ErrNotReplayed = errors.New("ledger: replication: the replica has not replayed the primary's writes")

// WaitReplayed waits until replica has replayed everything primary had
// written when it was called (pg_current_wal_lsn on the primary,
// pg_last_wal_replay_lsn on the replica), polling every poll (default
// 200 ms) until ctx ends, then returns an error matching ErrNotReplayed
// with the lag in bytes.
func WaitReplayed(ctx context.Context, primary, replica *sql.DB, poll time.Duration) error {
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	var lsn string
	if err := primary.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return fmt.Errorf("ledger: replication: reading the primary's position: %w", err)
	}
	var lag int64
	for {
		var standby bool
		err := replica.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), coalesce(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0)::bigint`, lsn).Scan(&standby, &lag)
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("ledger: replication: reading the replica's position: %w", err)
		case err == nil && !standby:
			return errors.New("ledger: replication: the replica is not a standby (pg_is_in_recovery() is false): name a replica of this primary")
		case err == nil && lag <= 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %d bytes behind %s", ErrNotReplayed, lag, lsn)
		case <-time.After(poll):
		}
	}
}
