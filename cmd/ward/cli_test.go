package main

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// cliEnv is the CLI under test: a fresh master key in the environment and
// a keyring path in a temporary folder.
type cliEnv struct {
	dir, krPath string
	mk          *local.MasterKey
	env         map[string]string
}

func newCLI(t *testing.T) *cliEnv {
	dir := t.TempDir()
	c := &cliEnv{dir: dir, krPath: filepath.Join(dir, "kr.json"), mk: local.Generate()}
	c.env = map[string]string{local.EnvVar: c.mk.Encode(), KeyringEnv: c.krPath}
	return c
}

// run runs ward with args and returns its exit code, stdout and stderr.
func (c *cliEnv) run(args ...string) (int, string, string) {
	return c.runCtx(context.Background(), args...)
}

func (c *cliEnv) runCtx(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return c.env[k] }}
	return a.run(ctx, args), out.String(), errb.String()
}

// newKeyring runs 'ward keyring new'.
func (c *cliEnv) newKeyring(t *testing.T) {
	t.Helper()
	if code, _, e := c.run("keyring", "new"); code != 0 {
		t.Fatal(e)
	}
}

// loadKeyring loads the keyring 'ward keyring new' made, as a process
// beside the CLI would.
func (c *cliEnv) loadKeyring(t *testing.T) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.Load(context.Background(), c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// sqlite opens a SQLite database in the folder: its URL and handle.
func (c *cliEnv) sqlite(t *testing.T, name string) (string, *sql.DB) {
	t.Helper()
	url := "sqlite:" + filepath.Join(c.dir, name)
	db, _, err := createDB(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// createDB opens a test database, creating a SQLite file (ward itself
// never creates one: openDB).
func createDB(url string) (*sql.DB, field.Dialect, error) {
	db, driver, err := dburl.Open(url)
	if err != nil {
		return nil, 0, err
	}
	d, err := field.ParseDialect(driver)
	return db, d, err
}
