package myserver

import (
	"context"
	"os"
	"testing"

	"github.com/wardlab/ward/dburl"
)

// TestServer: a server starts, takes the user's writes in its database
// "lab", and leaves nothing behind once stopped.
func TestServer(t *testing.T) {
	if !Available() {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(ErrMissing)
		}
		t.Skip(ErrMissing)
	}
	s, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := dburl.Open(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s.Stop()
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("the server's folder remains: %v", err)
	}
}
