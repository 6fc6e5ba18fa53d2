package dburl

import (
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/go-sql-driver/mysql" // registers "mysql"

	"github.com/wardlab/ward/internal/myurl"
)

// PasswordEnv is where a mysql:// URL without a password finds it, as the
// MySQL and MariaDB clients do (PGPASSWORD's counterpart).
const PasswordEnv = myurl.PasswordEnv

// parseMySQL reads a mysql:// or mariadb:// URL (package myurl).
func parseMySQL(s string) (URL, error) {
	cfg, secrets, err := myurl.Parse(s)
	if err != nil {
		return URL{}, fmt.Errorf("%w: %s: %v", ErrUnsupported, Redact(s), err)
	}
	return URL{Driver: "mysql", mysql: cfg, secrets: secrets}, nil
}

// openMySQL opens the server through go-sql-driver/mysql, taking the
// password from PasswordEnv when the URL has none.
func (u URL) openMySQL() (*sql.DB, error) {
	cfg := u.mysql.Clone()
	if cfg.Passwd == "" {
		cfg.Passwd = os.Getenv(PasswordEnv)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("dburl: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// MySQLConfig returns the driver configuration of a mysql:// URL, for a
// caller that must open it differently (a test creating databases); nil
// for other URLs.
func (u URL) MySQLConfig() *mysql.Config {
	if u.mysql == nil {
		return nil
	}
	return u.mysql.Clone()
}

// LogDriverTo sends go-sql-driver/mysql's own log lines (a connection
// reset, a bad idle connection), which it writes to the standard error
// by default, to w, so that a command's scrubbing writer sees them too.
func LogDriverTo(w io.Writer) {
	mysql.SetLogger(log.New(w, "mysql driver: ", 0))
}
