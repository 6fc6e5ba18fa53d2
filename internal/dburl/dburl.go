// Package dburl opens a database from a URL: postgres://… or
// postgresql://… through pgx's database/sql driver, and sqlite:PATH (or a
// bare path) through the embedded SQLite, in WAL mode with a busy timeout.
package dburl

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Open opens url and returns the database and its database/sql driver
// name ("pgx" or "sqlite"; field.ParseDialect maps it to a dialect). A
// SQLite file is created with mode 0600, and an existing one (with its
// -wal and -shm files) is made 0600: it holds ciphertexts, blind indexes
// and password hashes, which are nobody else's business.
func Open(url string) (*sql.DB, string, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err := sql.Open("pgx", url)
		return db, "pgx", err
	case strings.HasPrefix(url, "sqlite:"), !strings.Contains(url, "://"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, "", fmt.Errorf("dburl: empty SQLite path in %q", url)
		}
		if err := privateFile(path); err != nil {
			return nil, "", err
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		return db, "sqlite", err
	}
	return nil, "", fmt.Errorf("dburl: unsupported database URL scheme in %q (use postgres://… or sqlite:PATH)", Redact(url))
}

// privateFile creates path with mode 0600 if it does not exist, and
// removes group and other permissions from it and its SQLite companions.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("dburl: %w", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, st.Mode().Perm()&0o700); err != nil {
				return fmt.Errorf("dburl: making %s private: %w", p, err)
			}
		}
	}
	return nil
}

// Redact hides every secret in a database URL or DSN before it is
// printed, in each form pgx accepts: the password of a URL's userinfo
// (up to the last @, so a raw @ in the password is hidden too), and the value of every parameter whose name contains
// "password" (password, sslpassword, …), in a URL's query or a key=value
// DSN, quoted or not.
func Redact(u string) string {
	if scheme, rest, ok := strings.Cut(u, "://"); ok {
		// The userinfo ends at the last @: a raw @, /, ? or # in a
		// password is hidden with it. (An @ in the query of a URL without
		// a password may hide more than it must; it never shows less.)
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if user, _, hasPw := strings.Cut(rest[:at], ":"); hasPw && !strings.ContainsAny(user, "/?#") {
				rest = user + ":REDACTED" + rest[at:]
			}
		}
		return scheme + "://" + secretParam.ReplaceAllString(rest, "${1}REDACTED")
	}
	return secretKV.ReplaceAllString(u, "${1}REDACTED")
}

var (
	// secretParam is a URL query parameter whose name says password.
	secretParam = regexp.MustCompile(`(?i)([?&][^=&#]*password[^=&#]*=)[^&#]*`)
	// secretKV is a key=value DSN parameter whose name says password,
	// with a quoted ('…', backslash escapes) or bare value.
	secretKV = regexp.MustCompile(`(?i)(\b[a-z_]*password[a-z_]*\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)
)
