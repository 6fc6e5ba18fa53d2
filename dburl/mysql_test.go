package dburl

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseMySQL: a socket parameter means a Unix socket, a host without a
// port MySQL's 3306, the path the database; the password stays out of the
// URL's DSN until Open, which takes $MYSQL_PWD when the URL has none.
func TestParseMySQL(t *testing.T) {
	for _, c := range []struct{ in, net, addr, db, user string }{
		{"mysql://ward@localhost/app?socket=/run/mysqld/mysqld.sock", "unix", "/run/mysqld/mysqld.sock", "app", "ward"},
		{"mysql://ward:pw@db.internal/app", "tcp", "db.internal:3306", "app", "ward"},
		{"mariadb://ward@10.0.0.7:3307/notes?tls=true&wsrep_sync_wait=1", "tcp", "10.0.0.7:3307", "notes", "ward"},
	} {
		u, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		cfg := u.MySQLConfig()
		if cfg.Net != c.net || cfg.Addr != c.addr || cfg.DBName != c.db || cfg.User != c.user {
			t.Errorf("%s: %s %s %s %s", c.in, cfg.Net, cfg.Addr, cfg.DBName, cfg.User)
		}
	}
	u, _ := Parse("mariadb://ward@10.0.0.7/notes?tls=true&wsrep_sync_wait=1")
	if cfg := u.MySQLConfig(); cfg.TLS == nil && cfg.TLSConfig != "true" || cfg.Params["wsrep_sync_wait"] != "1" {
		t.Errorf("options: tls %q params %v", cfg.TLSConfig, cfg.Params)
	}
	if u, _ := Parse("sqlite:x.db"); u.MySQLConfig() != nil {
		t.Error("a SQLite URL has a MySQL configuration")
	}
	t.Setenv(PasswordEnv, "from-env")
	u, _ = Parse("mysql://ward@localhost/app?socket=/nonexistent.sock")
	db, err := u.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Fatal("a server on a missing socket answered")
	}
	if got := CommandSecrets([]string{"--db", "mysql://ward:in-url@h/app"}, func(k string) string {
		return map[string]string{PasswordEnv: "from-env"}[k]
	}); !slices.Contains(got, "from-env") || !slices.Contains(got, "in-url") {
		t.Errorf("CommandSecrets: %q", got)
	}
}

// TestLogDriverTo: the driver's own complaint about a server that hangs
// up mid-handshake goes to the writer given, not to the standard error.
func TestLogDriverTo(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{0x4a, 0, 0, 0, 0x0a}) // a packet header promising 74 bytes, then nothing
			c.Close()
		}
	}()
	var buf bytes.Buffer
	LogDriverTo(&buf)
	defer LogDriverTo(os.Stderr)
	u, _ := Parse("mysql://ward:pw@localhost/app?socket=" + sock)
	db, err := u.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Ping() == nil {
		t.Fatal("a server that hangs up answered")
	}
	if !strings.HasPrefix(buf.String(), "mysql driver: ") {
		t.Fatalf("the driver's log: %q", buf.String())
	}
}
