package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// grantChildEnv makes the test binary run TestGrantChild's loop: "issue"
// issues grants one after another, "revoke" issues and revokes them.
const grantChildEnv = "WARD_GRANT_CHILD"

// killChild starts the test binary's child test named run with env (the
// keyring's master key and file added), waits until ready says it is at
// work, and kills it with SIGKILL at a random moment within maxDelay.
func killChild(t *testing.T, c *cliEnv, run string, env []string, ready func() bool, maxDelay time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$")
	cmd.Env = append(append(os.Environ(), local.EnvVar+"="+c.mk.Encode(), KeyringEnv+"="+c.krPath), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !ready(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%s did nothing in 60 s", run)
		}
	}
	time.Sleep(rand.N(maxDelay))
	cmd.Process.Kill()
	cmd.Wait()
}

// killGrantChild runs TestGrantChild in mode and kills it once it has
// written a grant file, within 30 ms.
func killGrantChild(t *testing.T, c *cliEnv, url, mode string) {
	t.Helper()
	before, _ := filepath.Glob(filepath.Join(c.dir, "*.grant"))
	killChild(t, c, "TestGrantChild", []string{grantChildEnv + "=" + mode, "CHILD_DB=" + url, "CHILD_DIR=" + c.dir}, func() bool {
		now, _ := filepath.Glob(filepath.Join(c.dir, "*.grant"))
		return len(now) > len(before)
	}, 30*time.Millisecond)
}

// TestGrantKilled: 'ward grant' killed with SIGKILL at random moments, 10
// times; after each kill the next grant command here ('ward grant list')
// settles what the kill left: no grant stays pending, every live grant's
// file holds it, and every grant file written has a live grant (a grant
// whose file was never written is dropped, not left live for nobody); an
// empty file a kill left before its grant was recorded is taken by the
// next grant to that name, while one another command holds is refused.
func TestGrantKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	c := newCLI(t)
	c.newKeyring(t)
	url, db := c.sqlite(t, "app.db")
	c.run("keyring", "gen-master-key", "--out", filepath.Join(c.dir, "reader.mk"))
	kr, err := keyring.Load(context.Background(), c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
	pending, taken := 0, 0
	for kill := range 10 {
		killGrantChild(t, c, url, "issue")
		st, err := (&ledger.Ledger{DB: db, Dialect: field.SQLite}).Verified(context.Background(), kr)
		if err != nil {
			t.Fatal(err)
		}
		// st is nil when the child was killed before its first grant
		// reached the database (the file is taken first, then the grant
		// recorded): no ledger yet.
		for _, g := range stateGrants(st) { // before a grant command settles them
			if g.Pending {
				pending++
			}
		}
		if code, _, e := c.run("grant", "list", "--db", url); code != 0 {
			t.Fatalf("kill %d: grant list: %q", kill, e)
		}
		live := map[string]string{}
		for _, g := range c.grants(t, url) {
			if g.Pending || !g.Live() || grantFileID(g.Out) != g.ID {
				t.Fatalf("kill %d: grant %+v (its file holds %q)", kill, g, grantFileID(g.Out))
			}
			live[g.Out] = g.ID
		}
		files, _ := filepath.Glob(filepath.Join(c.dir, "*.grant"))
		for _, f := range files {
			if id := grantFileID(f); id != "" && live[f] != id {
				t.Fatalf("kill %d: %s holds grant %s, which is not live", kill, f, id)
			}
			if fi, err := os.Stat(f); err == nil && fi.Size() == 0 {
				taken++
				grantToFile(t, c, url, f, kill) // the name a killed command took, before it recorded its grant
			}
		}
	}
	t.Logf("%d kills left a pending grant, %d an empty file (taken over by the next grant to it)", pending, taken)
	f := filepath.Join(c.dir, "held.grant")
	held, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := lockFile(held); err != nil {
		t.Fatal(err)
	}
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", filepath.Join(c.dir, "reader.mk"), "--out", f); code == 0 {
		t.Fatalf("a grant to an empty file another command holds: %q", e)
	}
	for _, g := range c.grants(t, url) {
		if g.Out == f {
			t.Fatalf("a refused grant was recorded: %+v", g)
		}
	}
}

// grantToFile issues a grant to file f, which must then hold it, live.
func grantToFile(t *testing.T, c *cliEnv, url, f string, kill int) {
	t.Helper()
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", filepath.Join(c.dir, "reader.mk"), "--out", f); code != 0 {
		t.Fatalf("kill %d: a grant to the empty %s: %q", kill, f, e)
	}
	for _, g := range c.grants(t, url) {
		if g.Out == f && g.Live() && !g.Pending && grantFileID(f) == g.ID {
			return
		}
	}
	t.Fatalf("kill %d: %s holds %q, not a live grant", kill, f, grantFileID(f))
}

// TestRevokeKilled: 'ward grant revoke' killed with SIGKILL at random
// moments, 8 times; after each kill, revoking again each grant whose
// revocation did not finish finishes it: no revoked grant holds a key of
// the primary, and revoking a finished grant once more rotates nothing.
func TestRevokeKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	c := newCLI(t)
	c.newKeyring(t)
	url, _ := c.sqlite(t, "app.db")
	c.run("keyring", "gen-master-key", "--out", filepath.Join(c.dir, "reader.mk"))
	unfinished := 0
	for kill := range 8 {
		killGrantChild(t, c, url, "revoke")
		for _, g := range c.grants(t, url) {
			if !g.Live() && g.Finished.IsZero() {
				unfinished++
			}
			if !g.Pending && (g.Live() || g.Finished.IsZero()) {
				if code, out, e := c.run("grant", "revoke", g.ID, "--db", url, "--wait", "10s"); code != 0 {
					t.Fatalf("kill %d: revoking %s again: %d %q %q", kill, g.ID, code, out, e)
				}
			}
		}
		kr := c.loadKeyring(t)
		keys := len(kr.Keys())
		for _, g := range c.grants(t, url) {
			if g.Live() || g.Finished.IsZero() || slices.Contains(g.Keys, kr.Primary().ID) {
				t.Fatalf("kill %d: grant %+v, primary %v", kill, g, kr.Primary().ID)
			}
			if code, out, _ := c.run("grant", "revoke", g.ID, "--db", url); code != 0 || !strings.Contains(out, "nothing to do") {
				t.Fatalf("kill %d: revoking finished grant %s: %d %q", kill, g.ID, code, out)
			}
		}
		kr.Reload(ctx)
		if len(kr.Keys()) != keys {
			t.Fatalf("kill %d: revoking finished grants again rotated: %d keys, then %d", kill, keys, len(kr.Keys()))
		}
	}
	t.Logf("%d kills left a revocation unfinished", unfinished)
}

// TestGrantChild is the killed process of TestGrantKilled and
// TestRevokeKilled: it issues (and revokes) grants until it is killed.
func TestGrantChild(t *testing.T) {
	mode := os.Getenv(grantChildEnv)
	if mode == "" {
		t.Skip("run by TestGrantKilled and TestRevokeKilled")
	}
	a := &app{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	db, dir := os.Getenv("CHILD_DB"), os.Getenv("CHILD_DIR")
	id := regexp.MustCompile(`grant (g-[0-9a-f]{16}):`)
	for n := 0; ; n++ {
		var out strings.Builder
		a.stdout = &out
		file := filepath.Join(dir, fmt.Sprintf("%d-%d.grant", os.Getpid(), n))
		a.run(context.Background(), []string{"grant", "--db", db, "--scope", "notes.title", "--to-master-key-file", filepath.Join(dir, "reader.mk"), "--out", file})
		if m := id.FindStringSubmatch(out.String()); mode == "revoke" && m != nil {
			a.run(context.Background(), []string{"grant", "revoke", m[1], "--db", db, "--wait", "10s"})
		}
	}
}
