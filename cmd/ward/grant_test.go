package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestGrant: 'ward grant' issues notes.title to a reader whose own master
// key seals the file; 'ward decrypt --grant' with the reader's key opens a
// title and refuses a body; the ledger lists the grant; revoking it
// rotates the keyring, after which a new title does not open with it.
func TestGrant(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, _ := c.sqlite(t, "app.db")
	seal := func(col, text string) string { return c.sealed(t, col, text) }
	title, body := seal("title", "groceries"), seal("body", "milk, eggs")
	readerKey := filepath.Join(c.dir, "reader.mk")
	if code, _, e := c.run("keyring", "gen-master-key", "--out", readerKey); code != 0 {
		t.Fatal(e)
	}
	out := filepath.Join(c.dir, "titles.grant")
	code, stdout, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", readerKey, "--out", out)
	id := regexp.MustCompile(`grant (g-[0-9a-f]{16})`).FindStringSubmatch(stdout)
	if code != 0 || id == nil {
		t.Fatalf("grant: %d %q %q", code, stdout, e)
	}
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", readerKey, "--out", out); code != 2 || !strings.Contains(e, "never overwritten") {
		t.Fatalf("a second grant into the same file: %d %q", code, e)
	}
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--out", out+"2"); code != 2 || !strings.Contains(e, "--to") {
		t.Fatalf("a grant without the reader's key: %d %q", code, e)
	}
	mk, err := local.Load(readerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	reader := &cliEnv{dir: c.dir, env: map[string]string{local.EnvVar: mk.Encode()}}
	open := func(ct, col string) (int, string, string) {
		return reader.runStdin(ct, "decrypt", "--grant", out, "--table", "notes", "--column", col, "--row", "1")
	}
	if code, pt, e := open(title, "title"); code != 0 || pt != "groceries" {
		t.Fatalf("the reader opens a title: %d %q %q", code, pt, e)
	}
	if code, _, e := open(body, "title"); code != 1 || !strings.Contains(e, "another context") {
		t.Fatalf("a body presented as a title: %d %q", code, e)
	}
	if code, _, e := open(body, "body"); code != 1 || !strings.Contains(e, "does not cover") {
		t.Fatalf("the body column: %d %q", code, e)
	}
	if code, _, e := c.runStdin(title, "decrypt", "--grant", out, "--table", "notes", "--column", "title", "--row", "1"); code == 0 || !strings.Contains(e, "sealed under") {
		t.Fatalf("the grant under the operator's master key: %d %q", code, e)
	}
	if code, list, e := c.run("grant", "list", "--db", url); code != 0 || !strings.Contains(list, id[1]+"  notes.title") || !strings.Contains(list, "live") {
		t.Fatalf("grant list: %d %q %q", code, list, e)
	}
	code, stdout, e = c.run("grant", "revoke", id[1], "--db", url, "--wait", "10s")
	if code != 0 || !strings.Contains(stdout, "revoked") || !strings.Contains(stdout, "for ever") || !strings.Contains(stdout, "promoted") {
		t.Fatalf("revoke: %d %q %q", code, stdout, e)
	}
	if code, list, _ := c.run("grant", "list", "--db", url); code != 0 || !strings.Contains(list, "revoked 20") {
		t.Fatalf("grant list after the revocation: %q", list)
	}
	if code, _, e := open(seal("title", "new"), "title"); code != 1 || !strings.Contains(e, "ask for a new grant") {
		t.Fatalf("a title sealed after the revocation: %d %q", code, e)
	}
	if code, pt, _ := open(title, "title"); code != 0 || pt != "groceries" {
		t.Fatalf("a copy of a title taken before: %d %q", code, pt)
	}
	if code, _, e := c.run("grant", "revoke", "g-0000000000000000", "--db", url); code != 2 || !strings.Contains(e, "no grant") {
		t.Fatalf("revoking an unknown grant: %d %q", code, e)
	}
}

// TestGrantFlags: --key limits a grant to the keys named; --to takes the
// reader's key as a KMS URL; list --json; revoke --offline records only,
// --no-reseal rotates without re-sealing, and --wait bounds the wait
// for a process that never loads the new key.
func TestGrantFlags(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	old := c.sealed(t, "title", "old")
	if code, _, e := c.run("keyring", "rotate", "--db", url, "--wait", "10s"); code != 0 {
		t.Fatal(e)
	}
	kr := c.loadKeyring(t)
	readerKey := filepath.Join(c.dir, "reader.mk")
	c.run("keyring", "gen-master-key", "--out", readerKey)
	mk, _ := local.Load(readerKey, nil)
	reader := &cliEnv{dir: c.dir, env: map[string]string{local.EnvVar: mk.Encode()}}
	out := filepath.Join(c.dir, "old-only.grant")
	oldKey := kr.Keys()[0].ID.String()
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--key", oldKey, "--to", "local://"+readerKey, "--out", out); code != 0 {
		t.Fatalf("grant --key --to: %q", e)
	}
	fresh := c.sealed(t, "title", "fresh")
	open := func(ct string) (int, string, string) {
		return reader.runStdin(ct, "decrypt", "--grant", out, "--table", "notes", "--column", "title", "--row", "1")
	}
	if code, pt, e := open(old); code != 0 || pt != "old" {
		t.Fatalf("a value under the granted key: %d %q %q", code, pt, e)
	}
	if code, _, e := open(fresh); code != 1 || !strings.Contains(e, "ask for a new grant") {
		t.Fatalf("a value under a key the grant does not name: %d %q", code, e)
	}
	var list []ledger.Grant
	code, js, _ := c.run("grant", "list", "--db", url, "--json")
	if code != 0 || json.Unmarshal([]byte(js), &list) != nil || len(list) != 1 || list[0].Keys[0].String() != oldKey || !list[0].Live() {
		t.Fatalf("grant list --json: %q", js)
	}
	primary := kr.Primary().ID
	code, stdout, _ := c.run("grant", "revoke", list[0].ID, "--db", url, "--offline")
	kr.Reload(ctx)
	if code != 0 || !strings.Contains(stdout, "not rotating") || kr.Primary().ID != primary {
		t.Fatalf("revoke --offline: %d %q", code, stdout)
	}
	// A process that never loads a new key holds the rotation of a
	// revocation back for --wait, then the command fails naming it.
	c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", readerKey, "--out", out+"2")
	if code, js, _ = c.run("grant", "list", "--db", url, "--json"); code != 0 {
		t.Fatal(js)
	}
	json.Unmarshal([]byte(js), &list)
	frozen, _ := keyring.Load(ctx, c.krPath, c.mk)
	m, err := (&fleet.Registry{DB: db, Dialect: field.SQLite}).Join(ctx, frozen, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := list[slices.IndexFunc(list, func(g ledger.Grant) bool { return g.Live() })] // the list is in ID order
	code, _, e := c.run("grant", "revoke", second.ID, "--db", url, "--wait", "300ms")
	if code == 0 || !strings.Contains(e, "still waiting for "+m.ID()) {
		t.Fatalf("revoke --wait with a frozen process: %d %q", code, e)
	}
	m.Leave(ctx)
	code, stdout, e = c.run("grant", "revoke", second.ID, "--db", url, "--no-reseal")
	if code != 0 || !strings.Contains(stdout, "not resealing") || strings.Contains(stdout, "resealed under") {
		t.Fatalf("revoke --no-reseal: %d %q %q", code, stdout, e)
	}
}

// sealed is 'ward encrypt' of text into notes.<col> row 1.
func (c *cliEnv) sealed(t *testing.T, col, text string) string {
	t.Helper()
	code, out, e := c.runStdin(text, "encrypt", "--table", "notes", "--column", col, "--row", "1")
	if code != 0 {
		t.Fatalf("encrypt: %q", e)
	}
	return out
}

// retainer keeps every slice written to it, not a copy, so that a test
// can see whether the writer's caller cleared what it wrote.
type retainer struct{ got [][]byte }

func (r *retainer) Write(p []byte) (int, error) { r.got = append(r.got, p); return len(p), nil }

// TestDecryptClearsPlaintext: 'ward decrypt' clears the plaintext it
// printed, with the keyring and with a grant (which did not).
func TestDecryptClearsPlaintext(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, _ := c.sqlite(t, "app.db")
	title := c.sealed(t, "title", "groceries")
	readerKey := filepath.Join(c.dir, "reader.mk")
	if code, _, e := c.run("keyring", "gen-master-key", "--out", readerKey); code != 0 {
		t.Fatal(e)
	}
	grant := filepath.Join(c.dir, "titles.grant")
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", readerKey, "--out", grant); code != 0 {
		t.Fatal(e)
	}
	mk, err := local.Load(readerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"keyring", c.env, []string{"decrypt", "--table", "notes", "--column", "title", "--row", "1"}},
		{"grant", map[string]string{local.EnvVar: mk.Encode()}, []string{"decrypt", "--grant", grant, "--table", "notes", "--column", "title", "--row", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errb := &retainer{}, &bytes.Buffer{}
			a := &app{stdin: strings.NewReader(title), stdout: out, stderr: errb, getenv: func(k string) string { return tc.env[k] }}
			if code := a.run(context.Background(), tc.args); code != 0 {
				t.Fatalf("decrypt: %d %s", code, errb)
			}
			var printed int
			for _, p := range out.got {
				printed += len(p)
				if !bytes.Equal(p, make([]byte, len(p))) {
					t.Fatalf("the plaintext written (%d bytes) was not cleared: %q", len(p), p)
				}
			}
			if printed != len("groceries") {
				t.Fatalf("%d bytes written, want the plaintext's %d", printed, len("groceries"))
			}
		})
	}
}
