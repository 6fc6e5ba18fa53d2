package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/wardlab/ward/internal/localkms"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/ledger"
)

// readerKMS starts local-kms with a key aliased alias/reader and returns
// the key's URL.
func readerKMS(t *testing.T) string {
	t.Helper()
	srv, err := localkms.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	admin, _ := awskms.New(ctx, awskms.Config{KeyID: "x", Endpoint: srv.Endpoint(), Region: "us-east-1"})
	k, err := admin.Client().CreateKey(ctx, &sdk.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Client().CreateAlias(ctx, &sdk.CreateAliasInput{AliasName: aws.String("alias/reader"), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
		t.Fatal(err)
	}
	return "awskms://alias/reader?region=us-east-1&endpoint=" + srv.Endpoint()
}

// grants is 'ward grant list --json'.
func (c *cliEnv) grants(t *testing.T, url string) []ledger.Grant {
	t.Helper()
	var list []ledger.Grant
	code, js, e := c.run("grant", "list", "--db", url, "--json")
	if code != 0 || json.Unmarshal([]byte(js), &list) != nil {
		t.Fatalf("grant list: %d %q %q", code, js, e)
	}
	return list
}

// TestGrantReissuedOnRotation: a grant sealed under the reader's KMS key
// is re-issued by the rotation — a new grant of the same column with the
// new primary's key, in place of the old file, recorded as replacing the
// old one, which is revoked — so its reader opens values sealed after the
// rotation; a grant under a reader's master key is named instead.
// Retiring the old key re-issues the grant without it; revoking the grant
// by its first ID revokes its re-issue too.
func TestGrantReissuedOnRotation(t *testing.T) {
	c := newCLI(t)
	c.newKeyring(t)
	url, _ := c.sqlite(t, "app.db")
	to := readerKMS(t)
	out := filepath.Join(c.dir, "titles.grant")
	code, stdout, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to", to, "--out", out)
	if code != 0 {
		t.Fatalf("grant --to KMS: %d %q %q", code, stdout, e)
	}
	readerMK := filepath.Join(c.dir, "reader.mk")
	c.run("keyring", "gen-master-key", "--out", readerMK)
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to-master-key-file", readerMK, "--out", out+".mk"); code != 0 {
		t.Fatal(e)
	}
	granted := c.grants(t, url)
	first := granted[slices.IndexFunc(granted, func(g ledger.Grant) bool { return g.To != "" })]
	if first.To != to || first.Out != out {
		t.Fatalf("the KMS grant's record: %+v", first)
	}
	reader := &cliEnv{dir: c.dir, env: map[string]string{}}
	open := func(ct string) (int, string, string) {
		return reader.runStdin(ct, "--kms", to, "decrypt", "--grant", out, "--table", "notes", "--column", "title", "--row", "1")
	}
	before := c.sealed(t, "title", "before")
	code, stdout, e = c.run("keyring", "rotate", "--db", url, "--wait", "10s")
	if code != 0 || !strings.Contains(stdout, "grant "+first.ID+" re-issued as ") || !strings.Contains(stdout, "opens no value sealed from now on") {
		t.Fatalf("rotate: %d %q %q", code, stdout, e)
	}
	after := c.sealed(t, "title", "after")
	for ct, want := range map[string]string{before: "before", after: "after"} {
		if code, pt, e := open(ct); code != 0 || pt != want {
			t.Fatalf("the re-issued grant opens %q: %d %q %q", want, code, pt, e)
		}
	}
	list := c.grants(t, url)
	i := slices.IndexFunc(list, func(g ledger.Grant) bool { return g.Replaces == first.ID })
	if i < 0 || !list[i].Live() || list[i].To != to || grantFileID(out) != list[i].ID || len(list[i].Keys) != 2 {
		t.Fatalf("after the rotation: %+v (file %s)", list, grantFileID(out))
	}
	if old := list[slices.IndexFunc(list, func(g ledger.Grant) bool { return g.ID == first.ID })]; old.Live() {
		t.Fatalf("the replaced grant is live: %+v", old)
	}
	second := list[i]
	// The master-key grant holds the old key: revoked so that it does not
	// hold the retirement back; the KMS grant is re-issued without it.
	mkGrant := list[slices.IndexFunc(list, func(g ledger.Grant) bool { return g.To == "" })]
	c.run("grant", "revoke", mkGrant.ID, "--db", url, "--offline")
	code, stdout, e = c.run("keyring", "retire", first.Keys[0].String(), "--db", url)
	if code != 0 || !strings.Contains(stdout, "grant "+second.ID+" re-issued as ") || !strings.Contains(stdout, "retired") {
		t.Fatalf("retire: %d %q %q", code, stdout, e)
	}
	if code, pt, e := open(c.sealed(t, "title", "later")); code != 0 || pt != "later" {
		t.Fatalf("after the retirement: %d %q %q", code, pt, e)
	}
	code, stdout, e = c.run("grant", "revoke", first.ID, "--db", url, "--offline")
	if code != 0 || strings.Count(stdout, "revoked too") != 1 {
		t.Fatalf("revoking the first ID: %d %q %q", code, stdout, e)
	}
	for _, g := range c.grants(t, url) {
		if g.Live() {
			t.Fatalf("a grant of the lineage is live after its revocation: %+v", g)
		}
	}
}

// reissueChildEnv makes the test binary run TestReissueChild's loop.
const reissueChildEnv = "WARD_REISSUE_CHILD"

// TestReissueKilled: a process rotates the keyring again and again, each
// rotation re-issuing a KMS grant, and is killed with SIGKILL at a random
// moment, 8 times; after each kill, 'ward grant reissue' finishes what was
// interrupted: one live grant of the lineage, holding the primary, whose
// file is in place (its header names it) and opens a value sealed now,
// and nothing left beside it.
func TestReissueKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	c := newCLI(t)
	c.newKeyring(t)
	url, _ := c.sqlite(t, "app.db")
	to := readerKMS(t)
	out := filepath.Join(c.dir, "titles.grant")
	if code, _, e := c.run("grant", "--db", url, "--scope", "notes.title", "--to", to, "--out", out); code != 0 {
		t.Fatal(e)
	}
	reader := &cliEnv{dir: c.dir, env: map[string]string{}}
	for kill := range 8 {
		// Once a re-issue is under way (its file waits beside the old
		// one), at once or a moment later: between its steps.
		killChild(t, c, "TestReissueChild", []string{reissueChildEnv + "=1", "CHILD_DB=" + url}, func() bool {
			pending, _ := filepath.Glob(out + ".reissue-*")
			return len(pending) > 0
		}, 4*time.Millisecond)
		if code, stdout, e := c.run("grant", "reissue", "--db", url); code != 0 {
			t.Fatalf("kill %d: grant reissue: %d %q %q", kill, code, stdout, e)
		}
		checkReissued(t, c, reader, url, to, out, kill)
	}
}

// checkReissued checks the grants after a kill and a 'ward grant reissue'.
func checkReissued(t *testing.T, c, reader *cliEnv, url, to, out string, kill int) {
	t.Helper()
	kr, err := keyring.Load(context.Background(), c.krPath, c.mk)
	if err != nil {
		t.Fatal(err)
	}
	var live []ledger.Grant
	for _, g := range c.grants(t, url) {
		if g.Live() {
			live = append(live, g)
		}
	}
	if len(live) != 1 || !slices.Contains(live[0].Keys, kr.Primary().ID) || grantFileID(out) != live[0].ID {
		t.Fatalf("kill %d: live grants %+v, primary %v, file %s", kill, live, kr.Primary().ID, grantFileID(out))
	}
	if left, _ := filepath.Glob(out + ".reissue-*"); len(left) > 0 {
		t.Fatalf("kill %d: left beside the grant: %v", kill, left)
	}
	if code, pt, e := reader.runStdin(c.sealed(t, "title", "now"), "--kms", to, "decrypt", "--grant", out, "--table", "notes", "--column", "title", "--row", "1"); code != 0 || pt != "now" {
		t.Fatalf("kill %d: the grant opens %d %q %q", kill, code, pt, e)
	}
}

// TestReissueChild is the killed process of TestReissueKilled: it rotates
// the keyring until it is killed.
func TestReissueChild(t *testing.T) {
	if os.Getenv(reissueChildEnv) == "" {
		t.Skip("run by TestReissueKilled")
	}
	a := &app{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	re := regexp.MustCompile(`re-issued as`)
	for {
		var out strings.Builder
		a.stdout = &out
		if code := a.run(context.Background(), []string{"keyring", "rotate", "--db", os.Getenv("CHILD_DB"), "--wait", "10s"}); code != 0 && !re.MatchString(out.String()) {
			t.Logf("rotate: %d %s", code, out.String())
		}
	}
}
