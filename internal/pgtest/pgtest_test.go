package pgtest

import (
	"database/sql"
	"testing"
)

// TestSchemasApart: two URLs see different tables of the same name.
func TestSchemasApart(t *testing.T) {
	a, b := URL(t), URL(t)
	if a == "" {
		t.Skip(Env + " is not set")
	}
	for i, u := range []string{a, b} {
		db, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("CREATE TABLE notes (id INT PRIMARY KEY)"); err != nil {
			t.Fatalf("url %d: %v", i, err)
		}
		if _, err := db.Exec("INSERT INTO notes VALUES (1)"); err != nil {
			t.Fatalf("url %d: %v", i, err)
		}
	}
}
