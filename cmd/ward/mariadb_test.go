package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/mytest"
)

// TestOperatorOnMariaDB: an operator's first hour on MariaDB, from the
// CLI alone: encrypt a plaintext column online, check it (nothing left in
// plaintext, by SQL), rotate the keyring and re-encrypt, check the ledger,
// forget a subject and audit.
func TestOperatorOnMariaDB(t *testing.T) {
	url := mytest.URL(t)
	if url == "" {
		t.Skipf("%s is not set: skipping MariaDB (.ci/run starts a throwaway server and sets it)", mytest.Env)
	}
	c := newCLI(t)
	c.newKeyring(t)
	db, _, err := createDB(url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 200; i++ {
		if _, err := db.Exec("INSERT INTO notes VALUES (?, ?)", i, fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	col := []string{"--db", url, "--table", "notes", "--column", "body", "--text", "--key", "id"}
	step := func(want int, args ...string) string {
		t.Helper()
		code, out, e := c.run(args...)
		if code != want {
			t.Fatalf("ward %s: %d %q %q", strings.Join(args, " "), code, out, e)
		}
		if pw := os.Getenv(dburl.PasswordEnv); pw != "" && strings.Contains(out+e, pw) {
			t.Fatalf("ward %s printed the database password", args[0])
		}
		return out + e
	}
	step(0, append([]string{"encrypt-column"}, col...)...)
	var plain, sealed int
	if err := db.QueryRow("SELECT SUM(body NOT LIKE 'w4:%'), SUM(body LIKE 'w4:%') FROM notes").Scan(&plain, &sealed); err != nil || plain != 0 || sealed != 200 {
		t.Fatalf("after encrypt-column: %d plaintext, %d sealed, %v", plain, sealed, err)
	}
	step(0, append([]string{"encrypt-column", "--check"}, col...)...)
	step(0, "keyring", "rotate", "--offline")
	step(1, append([]string{"reseal", "--check"}, col[:len(col)-2]...)...)
	if out := step(0, append([]string{"reseal"}, col[:len(col)-2]...)...); !strings.Contains(out, "200 written") {
		t.Fatalf("reseal: %q", out)
	}
	step(0, append([]string{"reseal", "--check"}, col[:len(col)-2]...)...)
	step(0, "ledger", "--db", url)
	step(0, "subject", "forget", "--db", url, "--namespace", "users", "alice")
	if out := step(0, "subject", "audit", "--db", url); !strings.Contains(out, "users") {
		t.Fatalf("audit: %q", out)
	}
}
