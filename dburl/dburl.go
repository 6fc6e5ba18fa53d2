// Package dburl opens a database from a URL: postgres://… or
// postgresql://… (or a libpq key=value DSN) through pgx's database/sql
// driver, mysql://… (or mariadb://…) through go-sql-driver/mysql, and
// sqlite:PATH through the embedded SQLite, in WAL mode with a busy timeout.
// Anything else is refused before anything is opened.
package dburl

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Errors of Parse and Open.
var (
	// ErrUnsupported means the string is none of the forms ward accepts.
	ErrUnsupported = errors.New("dburl: not a database URL ward understands")
	// ErrNoDatabase means a SQLite file that Open does not create is
	// missing (a mistyped path, or a database not initialised yet).
	ErrNoDatabase = errors.New("dburl: no such database file")
)

// URL is a parsed database URL.
type URL struct {
	// Driver is the database/sql driver: "pgx", "mysql" or "sqlite".
	Driver string
	// Path is the SQLite file (sqlite only).
	Path    string
	dsn     string
	mysql   *mysql.Config
	secrets []string
}

var (
	dsnStart = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)
	scheme   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	dsnPass  = regexp.MustCompile(`(?i)\bpassword\s*=\s*('((?:[^'\\]|\\.)*)'|(\S+))`)
)

// Parse reads a database URL strictly: sqlite:PATH, a postgres:// or
// postgresql:// URL, a libpq key=value DSN ("host=… user=… dbname=…"), or
// a mysql:// or mariadb:// URL (mysql://user@host/db, or
// mysql://user@localhost/db?socket=PATH for a Unix socket; the password
// in the URL or in $MYSQL_PWD).
// Anything else is refused (ErrUnsupported) before anything is opened; no
// error quotes the string's secrets.
func Parse(s string) (URL, error) {
	switch {
	case strings.HasPrefix(s, "mysql://"), strings.HasPrefix(s, "mariadb://"):
		return parseMySQL(s)
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		// A raw @ in the user or password: drivers disagree about where
		// the host starts, and pgx would print part of the password as a
		// host name.
		auth := s[strings.Index(s, "://")+3:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if at := strings.LastIndex(auth, "@"); err == nil && at > 0 && strings.Contains(auth[:at], "@") {
			err = errors.New("raw @ in the user information")
		}
		if err != nil {
			return URL{}, fmt.Errorf("%w: %s is not a valid URL: a user name or password holding @ : / ? or # must be percent-encoded (%%40 for @)", ErrUnsupported, Redact(s))
		}
		out := URL{Driver: "pgx", dsn: s}
		if pw, ok := u.User.Password(); ok {
			out.secrets = append(out.secrets, pw)
			if _, raw, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(s, "postgresql://"), "postgres://"), ":"); ok {
				if at := strings.LastIndex(raw, "@"); at >= 0 && raw[:at] != pw {
					out.secrets = append(out.secrets, raw[:at]) // as written, percent-encoded
				}
			}
		}
		return out, nil
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(s, "sqlite:"), "//")
		if path == "" {
			return URL{}, fmt.Errorf("%w: empty SQLite path in %q", ErrUnsupported, s)
		}
		return URL{Driver: "sqlite", Path: path}, nil
	case dsnStart.MatchString(s):
		out := URL{Driver: "pgx", dsn: s}
		for _, m := range dsnPass.FindAllStringSubmatch(s, -1) {
			out.secrets = append(out.secrets, m[2]+m[3])
		}
		return out, nil
	case scheme.MatchString(s) && !strings.Contains(s, "/") || strings.Contains(s, "://"):
		return URL{}, fmt.Errorf("%w: unknown scheme in %s (use sqlite:PATH, postgres://…, mysql://… or a key=value DSN)", ErrUnsupported, Redact(s))
	}
	return URL{}, fmt.Errorf("%w: %s has no scheme: for a SQLite file write sqlite:%s", ErrUnsupported, Redact(s), Redact(s))
}

// Secrets returns what in the URL is secret (its password, as parsed and
// as written), for a caller to scrub from any text it prints, a driver's
// own messages included.
func (u URL) Secrets() []string { return u.secrets }

// Open opens the database. A SQLite file must exist (ErrNoDatabase): only
// Create makes one. An existing file (with its -wal and -shm files) is
// made 0600: it holds ciphertexts, blind indexes and password hashes,
// which are nobody else's business.
func (u URL) Open() (*sql.DB, error) { return u.open(false) }

// Create opens the database like Open, creating a missing SQLite file with
// mode 0600 (for commands whose purpose is to create, such as an init).
func (u URL) Create() (*sql.DB, error) { return u.open(true) }

func (u URL) open(create bool) (*sql.DB, error) {
	switch u.Driver {
	case "pgx":
		return sql.Open("pgx", u.dsn)
	case "mysql":
		return u.openMySQL()
	}
	if !create {
		if _, err := os.Stat(u.Path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoDatabase, u.Path)
		}
	}
	if err := privateFile(u.Path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", SQLiteDSN(u.Path))
	if err != nil {
		return nil, err
	}
	// The first connection turns a new file to WAL mode, which takes an
	// exclusive lock that SQLite does not wait for: processes opening a
	// fresh file at once can meet SQLITE_BUSY there. Once the file is in
	// WAL mode the pragma is a no-op, so one connection that got through
	// settles it for every later one.
	for attempt := 1; ; attempt++ {
		err := db.Ping()
		if err == nil || !busy(err) || attempt == walAttempts {
			if err != nil {
				db.Close()
				return nil, fmt.Errorf("dburl: opening %s: %w", u.Path, err)
			}
			return db, nil
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

// walAttempts bounds the tries of a new SQLite file's first connection.
const walAttempts = 20

// busy reports whether err is SQLite's "database is locked".
func busy(err error) bool {
	return strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked")
}

// Open parses url and opens it, creating a missing SQLite file; it
// returns the database and its database/sql driver name ("pgx", "mysql"
// or "sqlite"; field.ParseDialect maps it to a dialect). For tests and the
// lab, which make their own databases; a command that must not create
// uses Parse and URL.Open.
func Open(url string) (*sql.DB, string, error) {
	u, err := Parse(url)
	if err != nil {
		return nil, "", err
	}
	db, err := u.Create()
	return db, u.Driver, err
}

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

// CommandSecrets are the database passwords a command line and its
// environment hold: those of each --db URL (and of $WARD_DB) and
// $PGPASSWORD and $MYSQL_PWD, for [Scrub].
func CommandSecrets(args []string, getenv func(string) string) []string {
	urls := []string{getenv("WARD_DB")}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--db="); ok {
			urls = append(urls, v)
		} else if a == "--db" && i+1 < len(args) {
			urls = append(urls, args[i+1])
		}
	}
	secrets := []string{getenv("PGPASSWORD"), getenv(PasswordEnv)}
	for _, u := range urls {
		if p, err := Parse(u); err == nil {
			secrets = append(secrets, p.Secrets()...)
		}
	}
	return secrets
}

// SQLiteDSN is the data source name of the SQLite file at path as ward
// opens it with the modernc.org/sqlite driver: a 10 s busy timeout, WAL
// mode, and write transactions that begin IMMEDIATE. A deferred one that
// reads and then writes fails with SQLITE_BUSY_SNAPSHOT, which no busy
// timeout waits out, whenever another connection committed in between;
// read-only transactions (sql.TxOptions.ReadOnly) stay deferred. An
// adopter opening its own *sql.DB on a file ward shares should use it.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
}
