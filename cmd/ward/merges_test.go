package main

import (
	"strings"
	"testing"

	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
)

// TestIndexNormalizeRefusesMerges: on a table whose UNIQUE e-mail column
// holds "Alice@example.com" and "alice@example.com", encrypt-column with
// a case-folding index refuses before writing anything (the rows stay
// plaintext); with nfc it runs; without the unique constraint, folding
// runs too (the merge is what the application asked for). Without a
// unique index on the blind index (users3), the migration of the UNIQUE
// column is refused, and its dry run says so. On SQLite,
// PostgreSQL and MariaDB (where the unique column is a case-sensitive
// VARBINARY: a case-insensitive VARCHAR would itself refuse the two
// addresses).
func TestIndexNormalizeRefusesMerges(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t) // a keyring per database
			c.newKeyring(t)
			url, _ := c.sqlite(t, "app.db")
			if name == "postgres" {
				if url = pgtest.URL(t); url == "" {
					t.Skip(pgtest.Env + " is not set")
				}
			}
			if name == "mysql" {
				if url = mytest.URL(t); url == "" {
					t.Skip(mytest.Env + " is not set")
				}
			}
			db, _, err := openDB(url)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE, email_idx BYTEA)`,
				`CREATE UNIQUE INDEX users_email_idx ON users (email_idx)`,
				`CREATE TABLE notes2 (id INTEGER PRIMARY KEY, email TEXT, email_idx BYTEA)`,
				`CREATE TABLE users3 (id INTEGER PRIMARY KEY, email TEXT UNIQUE, email_idx BYTEA)`} {
				switch name {
				case "sqlite":
					q = strings.ReplaceAll(q, "BYTEA", "BLOB")
				case "mysql":
					q = strings.NewReplacer("email TEXT", "email VARBINARY(255)", "BYTEA", "VARBINARY(32)").Replace(q)
				}
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			for _, tb := range []string{"users", "notes2", "users3"} {
				if _, err := db.Exec(`INSERT INTO ` + tb + ` (id, email) VALUES (1, 'Alice@example.com'), (2, 'alice@example.com'), (3, 'bob@example.com')`); err != nil {
					t.Fatal(err)
				}
			}
			args := func(table, norm string) []string {
				return []string{"encrypt-column", "--db", url, "--table", table, "--column", "email", "--text", "--key", "id", "--index", "email_idx", "--index-normalize", norm}
			}
			code, _, e := c.run(args("users", "fold")...)
			if code != 1 || !strings.Contains(e, "1 groups of distinct values in users.email (2 rows)") || !strings.Contains(e, "nothing was written") {
				t.Fatalf("fold over a unique column: %d %q", code, e)
			}
			var plain int
			db.QueryRow(`SELECT COUNT(*) FROM users WHERE email LIKE '%@example.com'`).Scan(&plain)
			if plain != 3 {
				t.Fatalf("a refused migration wrote: %d plaintext rows left", plain)
			}
			if code, out, e := c.run(args("users", "nfc")...); code != 0 {
				t.Fatalf("nfc over a unique column: %d %q %q", code, out, e)
			}
			if code, out, e := c.run(args("notes2", "fold")...); code != 0 {
				t.Fatalf("fold without a unique constraint: %d %q %q", code, out, e)
			}
			if code, _, e := c.run(append(args("users3", "nfc"), "--dry-run")...); code != 0 || !strings.Contains(e, "would be refused: users3.email is kept unique") {
				t.Fatalf("dry run of a unique column without a unique index on its blind index: %d %q", code, e)
			}
			if code, _, e := c.run(args("users3", "nfc")...); code != 1 || !strings.Contains(e, "no unique index covers (email_idx)") || !strings.Contains(e, "nothing was written") {
				t.Fatalf("a unique column without a unique index on its blind index: %d %q", code, e)
			}
		})
	}
}
