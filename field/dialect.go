package field

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Dialect is the SQL flavour of a database: how placeholders and
// identifiers are written. The zero value is invalid.
type Dialect uint8

const (
	// DialectUnknown is the invalid zero value.
	DialectUnknown Dialect = iota
	// SQLite uses ? placeholders.
	SQLite
	// Postgres uses $1, $2, … placeholders.
	Postgres
	// MySQL is MariaDB (tested: 10.11) or MySQL: ? placeholders and
	// `backquoted` identifiers, whatever the session's sql_mode.
	MySQL
)

// String returns "sqlite", "postgres", "mysql" or "unknown".
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	}
	return "unknown"
}

// Placeholder returns the n-th (1-based) bind parameter.
func (d Dialect) Placeholder(n int) string {
	if d == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Rebind rewrites the ? placeholders of a query for the dialect ($1, $2, …
// for PostgreSQL). It does not parse SQL: queries must not contain ? in
// literals.
func (d Dialect) Rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString(d.Placeholder(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// QuoteIdent validates and quotes a (possibly schema-qualified) SQL
// identifier for SQLite and PostgreSQL ("double quotes"): letters, digits
// and underscores only, so that a table or column name from a flag or a
// config file cannot inject SQL. Dialect.Quote quotes for any dialect.
func QuoteIdent(s string) (string, error) { return Postgres.Quote(s) }

// Quote validates and quotes a (possibly schema-qualified) identifier as
// QuoteIdent does, in the dialect's quotes: `backquotes` for MySQL, where
// "double quotes" make a string unless sql_mode has ANSI_QUOTES.
func (d Dialect) Quote(s string) (string, error) {
	if !identRE.MatchString(s) {
		return "", fmt.Errorf("field: invalid SQL identifier %q", s)
	}
	q := byte('"')
	if d == MySQL {
		q = '`'
	}
	out := []byte{q}
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, q, '.', q)
			continue
		}
		out = append(out, s[i])
	}
	return string(append(out, q)), nil
}

// ParseDialect returns the dialect of a database/sql driver name: "sqlite"
// (modernc.org/sqlite) or "sqlite3" (mattn/go-sqlite3) for SQLite, "pgx" or
// "postgres" for PostgreSQL, "mysql" (go-sql-driver/mysql) for MariaDB and
// MySQL.
func ParseDialect(driverName string) (Dialect, error) {
	switch driverName {
	case "sqlite", "sqlite3":
		return SQLite, nil
	case "pgx", "postgres", "postgresql":
		return Postgres, nil
	case "mysql":
		return MySQL, nil
	}
	return DialectUnknown, fmt.Errorf("field: no SQL dialect for driver %q (sqlite, pgx or mysql)", driverName)
}
