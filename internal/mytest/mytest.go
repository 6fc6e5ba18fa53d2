// Package mytest isolates tests that share the MariaDB (or MySQL) server
// named by WARD_TEST_MYSQL_URL: each caller gets a database of its own,
// dropped when the test ends, so that test packages of several modules,
// which go test runs at once, never meet in a table of the same name. It
// registers no SQLite driver (an ORM's test may bring its own).
package mytest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql" // registers "mysql"

	"github.com/wardlab/ward/internal/myurl"
)

// Env names the environment variable with the server's URL (mysql://…,
// the password in it or in $MYSQL_PWD); .ci/mariadb starts a throwaway
// server and prints it.
const Env = "WARD_TEST_MYSQL_URL"

// URL returns the URL of a fresh database on the test server, dropped
// with everything in it when the test ends, or "" when Env is not set and
// the caller skips MySQL.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		return ""
	}
	name := fmt.Sprintf("ward_test_%d", rand.Uint64())
	exec(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { exec(nil, base, "DROP DATABASE IF EXISTS "+name) })
	head, query, _ := strings.Cut(base, "?")
	if i := strings.LastIndex(head, "/"); i > strings.Index(head, "://")+2 {
		head = head[:i]
	}
	if query != "" {
		query = "?" + query
	}
	return head + "/" + name + query
}

// DSN returns go-sql-driver/mysql's data source name for a URL of URL,
// with the password from $MYSQL_PWD when the URL has none, for a test
// that opens the database with sql.Open("mysql", …).
func DSN(t testing.TB, rawURL string) string {
	t.Helper()
	cfg, _, err := myurl.Parse(rawURL)
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	if cfg.Passwd == "" {
		cfg.Passwd = os.Getenv(myurl.PasswordEnv)
	}
	return cfg.FormatDSN()
}

// exec runs a statement on base; with a nil t, failures are ignored (a
// cleanup).
func exec(t testing.TB, base, stmt string) {
	var err error
	if cfg, _, perr := myurl.Parse(base); perr != nil {
		err = perr
	} else {
		if cfg.Passwd == "" {
			cfg.Passwd = os.Getenv(myurl.PasswordEnv)
		}
		var db *sql.DB
		if db, err = sql.Open("mysql", cfg.FormatDSN()); err == nil {
			defer db.Close()
			_, err = db.Exec(stmt)
		}
	}
	if err != nil && t != nil {
		t.Fatalf("mytest: %s: %v", stmt, err)
	}
}

// NonStrict opens the database of dsn (a DSN of [DSN]) with a session
// sql_mode that is not strict, closed when the test ends, after showing
// that such a session cuts an overlong value short instead of refusing it:
// what ward must refuse to write through (sqltable.RequireStrict).
func NonStrict(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = "'NO_ENGINE_SUBSTITUTION'"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var cut string
	if err := db.QueryRow(`SELECT CAST('0123456789' AS CHAR(4))`).Scan(&cut); err != nil || cut != "0123" {
		t.Fatalf("mytest: a non-strict session: %q %v", cut, err)
	}
	return db
}
