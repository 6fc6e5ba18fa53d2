// Package myurl reads ward's mysql:// and mariadb:// URLs into
// go-sql-driver/mysql's configuration. It imports no other driver, so that
// a test of an ORM with its own SQLite driver can use it (package dburl
// registers modernc.org/sqlite, whose driver name such ORMs' drivers take
// too).
package myurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// PasswordEnv is where a URL without a password finds it, as the MySQL and
// MariaDB clients do (PGPASSWORD's counterpart).
const PasswordEnv = "MYSQL_PWD"

// options are the query parameters a URL may carry besides socket: the
// driver's TLS choice and time-outs, and Galera's causal reads. Anything
// else is refused, since go-sql-driver/mysql sends an unknown parameter to
// the server as a SET statement.
var options = map[string]bool{"tls": true, "timeout": true, "readTimeout": true, "writeTimeout": true, "wsrep_sync_wait": true}

// ErrInvalid means a URL ward does not accept; its message never quotes
// the password.
var ErrInvalid = errors.New("myurl: invalid URL")

// Parse reads mysql://user[:password]@host[:port]/database[?socket=PATH&…]
// (mariadb:// too): a Unix socket when socket is given, TCP otherwise
// (port 3306 by default). DATETIME and TIMESTAMP scan into time.Time. It
// returns the configuration and the password as parsed and as written,
// for a caller to scrub.
func Parse(s string) (*mysql.Config, []string, error) {
	rest, ok := strings.CutPrefix(s, "mysql://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "mariadb://"); !ok {
			return nil, nil, fmt.Errorf("%w: not a mysql:// or mariadb:// URL", ErrInvalid)
		}
	}
	auth := rest
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	u, err := url.Parse(s)
	if err != nil || strings.Count(auth, "@") > 1 {
		return nil, nil, fmt.Errorf("%w: a user name or password holding @ : / ? or # must be percent-encoded (%%40 for @)", ErrInvalid)
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.ParseTime = true
	var secrets []string
	if pw, ok := u.User.Password(); ok {
		cfg.Passwd = pw
		secrets = append(secrets, pw)
		if _, raw, ok := strings.Cut(auth[:max(strings.LastIndex(auth, "@"), 0)], ":"); ok && raw != pw {
			secrets = append(secrets, raw) // as written, percent-encoded
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
		if !options[k] {
			return nil, nil, fmt.Errorf("%w: unknown parameter %q (socket, tls, timeout, readTimeout, writeTimeout or wsrep_sync_wait)", ErrInvalid, k)
		}
	}
	if len(q) > 0 {
		parsed, err := mysql.ParseDSN("/?" + q.Encode())
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		cfg.TLSConfig, cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout, cfg.Params = parsed.TLSConfig, parsed.Timeout, parsed.ReadTimeout, parsed.WriteTimeout, parsed.Params
	}
	return cfg, secrets, nil
}
