package main

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/wardlab/ward/field"
)

// openDB opens a database URL: postgres://… or postgresql://… through pgx,
// and sqlite:PATH (or a bare file path) through the embedded SQLite.
func openDB(url string) (*sql.DB, field.Dialect, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err := sql.Open("pgx", url)
		return db, field.Postgres, err
	case strings.HasPrefix(url, "sqlite:"), !strings.Contains(url, "://"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, 0, usage(fmt.Errorf("empty SQLite path in %q", url), "use sqlite:PATH")
		}
		dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
		db, err := sql.Open("sqlite", dsn)
		return db, field.SQLite, err
	}
	return nil, 0, usage(fmt.Errorf("unsupported database URL scheme in %q", redactURL(url)), "use postgres://… or sqlite:PATH")
}

// redactURL hides a password in a database URL before it is printed.
func redactURL(u string) string {
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
