package sqltable

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// LongText is the type of a text column of ward's tables that may hold up
// to a few MiB (a ledger's body): TEXT, or LONGTEXT on MySQL, whose TEXT
// stops at 64 KiB.
func LongText(engine string) string {
	if engine == MySQL {
		return "LONGTEXT"
	}
	return "TEXT"
}

// KeyText is the type of a text column that is part of a key or an index,
// of at most n bytes: TEXT, or VARBINARY(n) on MySQL, which indexes no TEXT
// (error 1170) and whose VARCHAR would compare case-insensitively.
func KeyText(engine string, n int) string {
	if engine == MySQL {
		return fmt.Sprintf("VARBINARY(%d)", n)
	}
	return "TEXT"
}

// Blob is the type of a binary column: BLOB, BYTEA on PostgreSQL,
// LONGBLOB on MySQL (whose BLOB stops at 64 KiB).
func Blob(engine string) string {
	switch engine {
	case Postgres:
		return "BYTEA"
	case MySQL:
		return "LONGBLOB"
	}
	return "BLOB"
}

// Duplicate reports whether err is a unique violation: PostgreSQL's 23505,
// SQLite's UNIQUE or PRIMARY KEY constraint, MySQL's 1062. MySQL has no
// ON CONFLICT DO NOTHING (INSERT IGNORE would also turn a truncation into a
// warning), so an insert that may meet an existing row there is a plain
// INSERT whose duplicate error means "already there".
func Duplicate(err error) bool {
	if err == nil {
		return false
	}
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23505"
	}
	if n, ok := mysqlNumber(err); ok {
		return n == 1062
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed") || strings.Contains(err.Error(), "constraint failed: PRIMARY KEY")
}

// Conflict reports whether err is a transaction the server rolled back
// for a concurrent one: MySQL's 1213 (a deadlock, or on a Galera cluster a
// transaction that lost certification to a concurrent one on another
// node), PostgreSQL's 40001 (a serialization failure) or 40P01 (a
// deadlock). The transaction may be retried; a compare-and-swap counts it
// as a lost race.
func Conflict(err error) bool {
	if err == nil {
		return false
	}
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "40001" || pg.SQLState() == "40P01"
	}
	n, ok := mysqlNumber(err)
	return ok && n == 1213
}

// ErrNodeNotReady means a MySQL or MariaDB server refused a statement for
// a state that passes: on Galera, a node outside the primary component
// (error 1047, "WSREP has not yet prepared node for application use") or
// a lock wait that timed out while the cluster reconfigured after a node
// left (1205). Nothing was decided; retry, or use another node.
var ErrNodeNotReady = errors.New("the database node cannot serve now: on Galera, outside the primary component or reconfiguring after a node left; nothing was decided, retry or use another node")

// NodeNotReady wraps err with [ErrNodeNotReady] when it is MySQL's 1047 or
// 1205, and returns it unchanged otherwise.
func NodeNotReady(err error) error {
	if n, ok := mysqlNumber(err); ok && (n == 1047 || n == 1205) {
		return fmt.Errorf("%w: %w", ErrNodeNotReady, err)
	}
	return err
}

// mysqlNumber finds a MySQL server error in err's chain by its text,
// "Error 1146 (42S02): …" as go-sql-driver/mysql's *MySQLError prints it,
// since a library package imports no driver.
func mysqlNumber(err error) (int, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		m := mysqlErr.FindStringSubmatch(e.Error())
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		return n, err == nil
	}
	return 0, false
}

var mysqlErr = regexp.MustCompile(`^Error ([0-9]{4,5}) \([0-9A-Z]{5}\): `)

// TableExists returns a query, with one placeholder for the table's name,
// counting the tables of that name in the current schema or database.
func TableExists(engine string) string {
	switch engine {
	case Postgres:
		return `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`
	case MySQL:
		return `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`
	}
	return `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
}

// IfAbsent returns how an insert that skips rows whose key exists starts
// and ends: "INSERT INTO" … " ON CONFLICT DO NOTHING", or on MySQL, which
// has no ON CONFLICT, "INSERT IGNORE INTO" … "". IGNORE also turns a value
// too long for its column into a warning: callers bound every value to its
// column first. The statement's row count is what it inserted, on every
// engine (with ON DUPLICATE KEY UPDATE, MySQL would count a skipped row as
// inserted under the driver's clientFoundRows).
func IfAbsent(engine string) (insert, suffix string) {
	if engine == MySQL {
		return "INSERT IGNORE INTO", ""
	}
	return "INSERT INTO", " ON CONFLICT DO NOTHING"
}
