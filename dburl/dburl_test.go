package dburl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
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
	db, _, err = Open("sqlite:" + path)
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
	if _, _, err := Open("oracle://x"); err == nil {
		t.Fatal("oracle accepted")
	}
}

// TestRedact covers each form pgx accepts.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h/db":                    "postgres://u:REDACTED@h/db",
		"postgres://u:pa@ss@h:5432/db":                "postgres://u:REDACTED@h:5432/db",
		"postgres://u:p/a@h/db?sslmode=disable":       "postgres://u:REDACTED@h/db?sslmode=disable",
		"postgres://u@h/db?password=secret&sslmode=x": "postgres://u@h/db?password=REDACTED&sslmode=x",
		"postgres://h/db?sslpassword=s1&PASSWORD=s2":  "postgres://h/db?sslpassword=REDACTED&PASSWORD=REDACTED",
		"host=h user=u password=secret dbname=d":      "host=h user=u password=REDACTED dbname=d",
		"host=h password='sec ret\\' x' dbname=d":     "host=h password=REDACTED dbname=d",
		"host=h sslpassword = s dbname=d":             "host=h sslpassword = REDACTED dbname=d",
		"sqlite:chat.db":                              "sqlite:chat.db",
		"postgres://u@h,h2/db":                        "postgres://u@h,h2/db",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedact: whatever the password holds, it does not survive Redact in
// any of the forms, and Redact never panics.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"secret", "pa@ss", "p/a?b#c", "a'b\\c", "x y"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, pw string, form uint8) {
		Redact(pw) // no panic on anything
		if len(pw) < 4 || strings.ContainsAny(pw, "\x00\n\r\t &=") || strings.Contains("postgres://u:REDACTED@h/db?sslmode=x&password=REDACTED host=h user=u dbname=d", pw) {
			return
		}
		var in string
		switch form % 3 {
		case 0:
			if strings.ContainsAny(pw, "#?") && strings.Contains(pw, "@") {
				return // not a URL pgx would parse either
			}
			in = "postgres://u:" + pw + "@h/db?sslmode=x"
		case 1:
			if strings.ContainsAny(pw, "#") {
				return
			}
			in = "postgres://u@h/db?password=" + pw + "&sslmode=x"
		case 2:
			if strings.ContainsAny(pw, "'\\") {
				return
			}
			in = "host=h user=u password='" + pw + "' dbname=d"
		}
		if out := Redact(in); strings.Contains(out, pw) {
			t.Fatalf("Redact(%q) = %q keeps the password", in, out)
		}
	})
}

// TestParse: the three forms are taken, anything else is refused before
// anything is opened, no error quotes a password (not even the part of
// one after a raw @), and only Create makes a SQLite file.
func TestParse(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct {
		in, driver string
		secrets    []string
		err        error
		hint       string
	}{
		{in: "postgres://ward:s3cr3t@db:5432/app", driver: "pgx", secrets: []string{"s3cr3t"}},
		{in: "postgresql://ward:p%40ss@db/app", driver: "pgx", secrets: []string{"p@ss", "p%40ss"}},
		{in: "host=db user=ward password=hunter2 dbname=x", driver: "pgx", secrets: []string{"hunter2"}},
		{in: "host=db password='two words' dbname=x", driver: "pgx", secrets: []string{"two words"}},
		{in: "sqlite:app.db", driver: "sqlite"},
		{in: "postgres://ward:s3cr3t@ss@127.0.0.1:1/db", err: ErrUnsupported, hint: "percent-encoded"},
		{in: "sqllite:small.db", err: ErrUnsupported, hint: "unknown scheme"},
		{in: "oracle://u:pw@h/db", err: ErrUnsupported, hint: "unknown scheme"},
		{in: "mysql://u:p%40w@h/db", driver: "mysql", secrets: []string{"p@w", "p%40w"}},
		{in: "mariadb://u@localhost/db?socket=/run/mysqld/mysqld.sock", driver: "mysql"},
		{in: "mysql://u:s3cr3t@ss@h/db", err: ErrUnsupported, hint: "percent-encoded"},
		{in: "mysql://u:pw@h/db?multiStatements=true", err: ErrUnsupported, hint: "unknown parameter"},
		{in: "mysql://u:pw@h/db?sql_mode=ANSI", err: ErrUnsupported, hint: "unknown parameter"},
		{in: "small.db", err: ErrUnsupported, hint: "sqlite:small.db"},
		{in: "sqlite:", err: ErrUnsupported},
	} {
		u, err := Parse(c.in)
		if !errors.Is(err, c.err) || err == nil && (u.Driver != c.driver || !slices.Equal(u.Secrets(), c.secrets)) {
			t.Errorf("%q: %+v %v", c.in, u, err)
		}
		if err != nil && (!strings.Contains(err.Error(), c.hint) || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "ss@") || strings.Contains(err.Error(), "pw")) {
			t.Errorf("%q: %v", c.in, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Parse created %v", entries)
	}
	u, _ := Parse("sqlite:smal.db")
	if _, err := u.Open(); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open of a missing file created %v", entries)
	}
	db, err := u.Create()
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := os.Stat("smal.db"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("Create: %v %v", st, err)
	}
}

// TestCommandSecrets: the passwords of every --db form on a command line,
// of $WARD_DB and $PGPASSWORD.
func TestCommandSecrets(t *testing.T) {
	env := map[string]string{"WARD_DB": "postgres://u:fromenv@h/db", "PGPASSWORD": "pgpass"}
	got := CommandSecrets([]string{"reseal", "--db", "host=h password=dsnpw", "--db=postgresql://u:eqform@h/db", "--db", "sqlite:x.db", "--table", "t"},
		func(k string) string { return env[k] })
	for _, want := range []string{"fromenv", "pgpass", "dsnpw", "eqform"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// FuzzParse: Parse never panics, and a URL or DSN it refuses or accepts
// never has its password in the error; what it accepts names the password
// among its secrets, for scrubbing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"s3cr3t", "pa@ss", "p%40ss", "a b", "x:y", ""} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, pw string, form uint8) {
		Parse(pw) // no panic on anything
		if len(pw) < 4 || strings.ContainsAny(pw, "\x00#/?'\\\\%") || strings.ContainsFunc(pw, unicode.IsSpace) {
			return // forms neither a URL nor a DSN can hold unquoted
		}
		var in string
		switch form % 2 {
		case 0:
			in = "postgres://u:" + pw + "@h/db"
		case 1:
			in = "host=h user=u password=" + pw + " dbname=d"
		}
		u, err := Parse(in)
		if err != nil {
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("Parse(%q) error quotes the password: %v", in, err)
			}
			return
		}
		if !slices.Contains(u.Secrets(), pw) && !strings.Contains(strings.Join(u.Secrets(), " "), pw) {
			t.Fatalf("Parse(%q) secrets %q lack the password", in, u.Secrets())
		}
	})
}
