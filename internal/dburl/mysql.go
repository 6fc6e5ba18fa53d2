package dburl

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql" // registers "mysql"
)

// PasswordEnv is where a mysql:// URL without a password finds it, as the
// MySQL and MariaDB clients do (PGPASSWORD's counterpart).
const PasswordEnv = "MYSQL_PWD"

// mysqlOptions are the query parameters a mysql:// URL may carry besides
// socket: the driver's TLS choice and time-outs. Anything else is refused,
// since go-sql-driver/mysql sends an unknown parameter to the server as a
// SET statement.
var mysqlOptions = map[string]bool{"tls": true, "timeout": true, "readTimeout": true, "writeTimeout": true, "wsrep_sync_wait": true}

// parseMySQL reads mysql://user[:password]@host[:port]/database[?socket=PATH&…]
// (mariadb:// too): a Unix socket when socket is given, TCP otherwise.
func parseMySQL(s string) (URL, error) {
	u, err := url.Parse(s)
	auth := s[strings.Index(s, "://")+3:]
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if err == nil && strings.Count(auth, "@") > 1 {
		err = errors.New("raw @ in the user information")
	}
	if err != nil {
		return URL{}, fmt.Errorf("%w: %s is not a valid URL: a user name or password holding @ : / ? or # must be percent-encoded (%%40 for @)", ErrUnsupported, Redact(s))
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.ParseTime = true // DATETIME and TIMESTAMP scan into time.Time, as with the other drivers
	out := URL{Driver: "mysql"}
	if pw, ok := u.User.Password(); ok {
		cfg.Passwd = pw
		out.secrets = append(out.secrets, pw)
		if _, raw, ok := strings.Cut(auth[:max(strings.LastIndex(auth, "@"), 0)], ":"); ok && raw != pw {
			out.secrets = append(out.secrets, raw) // as written, percent-encoded
		}
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	if sock := q.Get("socket"); sock != "" {
		cfg.Net, cfg.Addr = "unix", sock
	} else {
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
		}
	}
	q.Del("socket")
	for k := range q {
		if !mysqlOptions[k] {
			return URL{}, fmt.Errorf("%w: %s: unknown parameter %q (socket, tls, timeout, readTimeout, writeTimeout or wsrep_sync_wait)", ErrUnsupported, Redact(s), k)
		}
	}
	if len(q) > 0 {
		dsn := "/?" + q.Encode()
		parsed, err := mysql.ParseDSN(dsn)
		if err != nil {
			return URL{}, fmt.Errorf("%w: %s: %v", ErrUnsupported, Redact(s), err)
		}
		cfg.TLSConfig, cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout, cfg.Params = parsed.TLSConfig, parsed.Timeout, parsed.ReadTimeout, parsed.WriteTimeout, parsed.Params
	}
	out.mysql = cfg
	return out, nil
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
