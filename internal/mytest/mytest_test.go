package mytest

import (
	"testing"

	"github.com/wardlab/ward/dburl"
)

// TestDatabasesApart: two callers get two databases; a table one creates
// is not the other's, and each database is gone after its test.
func TestDatabasesApart(t *testing.T) {
	var urls []string
	for range 2 {
		t.Run("caller", func(t *testing.T) {
			u := URL(t)
			if u == "" {
				t.Skipf("%s is not set: skipping MySQL (.ci/run starts a throwaway MariaDB and sets it)", Env)
			}
			urls = append(urls, u)
			db, _, err := dburl.Open(u)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(urls) < 2 {
		return
	}
	db, _, err := dburl.Open(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Fatalf("the first test's database outlived it")
	}
}
