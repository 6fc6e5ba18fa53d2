// Package dburl opens a database from a URL: postgres://… or
// postgresql://… through pgx's database/sql driver, and sqlite:PATH (or a
// bare path) through the embedded SQLite, in WAL mode with a busy timeout.
package dburl

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/wardlab/ward/field"
)

// Open opens url and returns the database and its dialect.
func Open(url string) (*sql.DB, field.Dialect, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err := sql.Open("pgx", url)
		return db, field.Postgres, err
	case strings.HasPrefix(url, "sqlite:"), !strings.Contains(url, "://"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, 0, fmt.Errorf("dburl: empty SQLite path in %q", url)
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		return db, field.SQLite, err
	}
	return nil, 0, fmt.Errorf("dburl: unsupported database URL scheme in %q (use postgres://… or sqlite:PATH)", Redact(url))
}

// Redact hides a password in a database URL before it is printed.
func Redact(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return u
	}
	if user, _, hasPw := strings.Cut(userinfo, ":"); hasPw {
		return scheme + "://" + user + ":REDACTED@" + host
	}
	return u
}
