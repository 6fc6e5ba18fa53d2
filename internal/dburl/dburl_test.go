package dburl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFilesPrivate: a new database and its WAL are 0600; an existing
// group-readable one is tightened.
func TestSQLiteFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	db, driver, err := Open("sqlite:" + path)
	if err != nil || driver != "sqlite" {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Exec(`INSERT INTO t VALUES ('x')`)
	for _, p := range []string{path, path + "-wal"} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, st.Mode(), err)
		}
	}
	db.Close()
	os.Chmod(path, 0o644)
	db, _, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("existing file left %v", st.Mode())
	}
	if Redact("postgres://u:secret@h/db") != "postgres://u:REDACTED@h/db" {
		t.Fatal("redact")
	}
	if _, _, err := Open("mysql://x"); err == nil {
		t.Fatal("mysql accepted")
	}
}
