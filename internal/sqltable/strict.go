package sqltable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotStrict means a MySQL or MariaDB server or session writes without a
// strict sql_mode (neither STRICT_TRANS_TABLES nor STRICT_ALL_TABLES):
// there a value too long for its column is cut short with a warning, not
// refused, and a ciphertext cut short is lost for good, plaintext and all.
var ErrNotStrict = errors.New("ward seals values into this MySQL/MariaDB database, whose sql_mode is not strict: a value too long for its column would be cut short with a warning instead of refused, and a ciphertext cut short is lost for good")

// NotStrictError names the sql_mode that is not strict, and where it is
// set: "GLOBAL" (the server's, which every client without its own setting
// inherits) or "SESSION" (this connection's, set by its URL or driver).
type NotStrictError struct {
	Scope, Mode string
}

func (e *NotStrictError) Error() string {
	return fmt.Sprintf("%v (@@%s.sql_mode is %s): add STRICT_TRANS_TABLES to it (SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',STRICT_TRANS_TABLES'), and sql_mode in the servers' configuration; docs/OPERATIONS.md, \"MySQL and MariaDB\")",
		ErrNotStrict, e.Scope, strconv.Quote(e.Mode))
}

// Is reports whether target is ErrNotStrict.
func (e *NotStrictError) Is(target error) bool { return target == ErrNotStrict }

// RequireStrict returns a [*NotStrictError] when db reaches a MySQL or
// MariaDB server whose global sql_mode, or whose session's (db's own
// connections'), is not strict. Both must be: ward's processes write
// through db, but the application, a Python job or a JVM service writes
// with connections of their own, which inherit the global mode unless
// they set one. Other engines refuse an overlong value always.
func RequireStrict(ctx context.Context, db *sql.DB, engine string) error {
	if engine != MySQL {
		return nil
	}
	var global, session string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode, @@SESSION.sql_mode").Scan(&global, &session); err != nil {
		return fmt.Errorf("asking the server's sql_mode: %w", err)
	}
	for _, m := range []struct{ scope, mode string }{{"GLOBAL", global}, {"SESSION", session}} {
		if !strictMode(m.mode) {
			return &NotStrictError{Scope: m.scope, Mode: m.mode[:min(len(m.mode), 256)]}
		}
	}
	return nil
}

// strictMode reports whether a sql_mode refuses overlong values in
// transactional tables (InnoDB, what ward's tables and an adopter's are).
func strictMode(mode string) bool {
	for _, m := range strings.Split(mode, ",") {
		if m == "STRICT_TRANS_TABLES" || m == "STRICT_ALL_TABLES" {
			return true
		}
	}
	return false
}

// ColumnWidth returns the most characters (for a text column; bytes for a
// binary one) a column of table holds, as declared: VARCHAR(n) and CHAR(n)
// on PostgreSQL (TEXT and BYTEA are unbounded: 0); on MySQL and MariaDB
// every string type, TEXT (65,535 bytes) included, the smaller of its
// character and byte limits (a ciphertext's text form is ASCII); 0 on
// SQLite, which enforces no declared width. table is unquoted and may be
// schema-qualified ("s.t").
func ColumnWidth(ctx context.Context, db *sql.DB, engine, table, column string) (int64, error) {
	var q string
	var args []any
	switch engine {
	case Postgres:
		q = `SELECT CASE WHEN atttypid IN ('varchar'::regtype, 'bpchar'::regtype) AND atttypmod > 4 THEN atttypmod - 4 ELSE 0 END
			FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`
		args = []any{quotePG(table), column}
	case MySQL:
		schema, name, qualified := strings.Cut(table, ".")
		if !qualified {
			name = table
		}
		q = `SELECT COALESCE(LEAST(CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH), 0) FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?`
		if !qualified {
			schema = ""
		}
		args = []any{schema, name, column}
	default:
		return 0, nil
	}
	var w sql.NullInt64
	err := db.QueryRowContext(ctx, q, args...).Scan(&w)
	if errors.Is(err, sql.ErrNoRows) { // not a base table's column (a view's): no declared width to check
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the declared width of %s.%s: %w", table, column, err)
	}
	return w.Int64, nil
}

// quotePG quotes each part of a possibly schema-qualified PostgreSQL name
// for a regclass cast.
func quotePG(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}
