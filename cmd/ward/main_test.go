package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/kms/plugin/plugintest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ward":          main,
		"ward-kms-test": func() { os.Exit(plugintest.Main()) }, // a key-service plug-in (plugin.txtar)
	})
}

// TestScripts runs the real ward binary on the scripts in testdata/script,
// one per command: a command line, then what it prints. A script that
// needs a keyring and a database starts with the fixture command.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"fixture": fixture,
	}})
}

// fixture is the scripts' set-up: a master key (in $WARD_MASTER_KEY and
// the file mk), a keyring sealed under it ($WARD_KEYRING, kr.json), and a
// SQLite database ($DB, app.db) with a table notes (id, title) of three
// plaintext rows: first, second, third.
func fixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: fixture")
	}
	mk := local.Generate()
	ts.Check(os.WriteFile(ts.MkAbs("mk"), []byte(mk.Encode()+"\n"), 0o600))
	ts.Setenv(local.EnvVar, mk.Encode())
	ts.Setenv(KeyringEnv, ts.MkAbs("kr.json"))
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: ts.Getenv}
	if code := a.run(context.Background(), []string{"keyring", "new"}); code != 0 {
		ts.Fatalf("keyring new: %s", errb.String())
	}
	url := "sqlite:" + filepath.ToSlash(ts.MkAbs("app.db"))
	db, _, err := createDB(url)
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO notes VALUES (1, 'first'), (2, 'second'), (3, 'third')`)
	ts.Check(err)
	ts.Setenv("DB", url)
}
