package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// goCmd runs the go command of the toolchain that built this test in dir,
// with env added, and returns its combined output.
func goCmd(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serveModule puts the module in dir into the folder module proxy at
// proxy, at version v, as a release would publish it.
func serveModule(t *testing.T, proxy, path, v, dir string) {
	t.Helper()
	esc, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, esc, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": v, "Time": time.Now().UTC()})
	for name, data := range map[string][]byte{v + ".mod": mod, v + ".info": info, "list": []byte(v + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: path, Version: v}, dir); err != nil {
		t.Fatalf("zipping %s: %v", path, err)
	}
	if err := os.WriteFile(filepath.Join(at, v+".zip"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// releaseProxy serves the library and kms/awskms from this checkout in a
// folder module proxy, at the version awskms's go.mod requires of the
// library (as a release tags them both), and returns the proxy, that
// version and the environment of a go command outside the workspace that
// reads them there and everything else from the module cache. It first
// downloads the library's and awskms's module graphs into the cache (with
// the proxy the environment names; in CI's namespace, where GOPROXY=off,
// .ci/run has fetched them), so that a fresh machine's cache holds every
// module an adopter's go mod tidy reads.
func releaseProxy(t *testing.T) (proxy, v string, env []string) {
	t.Helper()
	b, err := os.ReadFile("../kms/awskms/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == "github.com/wardlab/ward" {
			v = r.Mod.Version
		}
		if strings.HasPrefix(r.Mod.Path, "github.com/wardlab/ward/") {
			t.Errorf("kms/awskms requires %s, which no adopter can download: a test-only module belongs in integration", r.Mod.Path)
		}
	}
	if !semver.IsValid(v) || module.IsPseudoVersion(v) {
		t.Fatalf("kms/awskms requires the library at %q: want a release version, which an adopter can download", v)
	}
	for _, dir := range []string{"..", "../kms/awskms", "../contrib/otel", "../examples"} {
		if out, err := goCmd(t, dir, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "mod", "download"); err != nil {
			t.Fatalf("go mod download in %s (the modules an adopter's build reads): %v\n%s", dir, err, out)
		}
	}
	proxy = t.TempDir()
	serveModule(t, proxy, "github.com/wardlab/ward", v, "..")
	serveModule(t, proxy, "github.com/wardlab/ward/kms/awskms", v, "../kms/awskms")
	serveModule(t, proxy, "github.com/wardlab/ward/contrib/otel", v, "../contrib/otel")
	cache, err := goCmd(t, ".", nil, "env", "GOMODCACHE")
	if err != nil {
		t.Fatal(cache)
	}
	// A module cache of its own: ward's modules at v0.1.0 are this
	// checkout's, served here, never a copy an earlier run left in the
	// user's cache (and none is left there). -trimpath lets the build
	// cache reuse what the workspace compiled of the other modules.
	env = []string{"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw -trimpath", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOMODCACHE=" + t.TempDir(),
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(strings.TrimSpace(cache), "cache", "download"))}
	return proxy, v, env
}

// TestRequirable: an adopter's module outside the workspace requires
// kms/awskms at a release version, with no replace directive, and builds
// a program that uses it with the library (field, keyring, kms). The
// library and awskms are served from this checkout by a module proxy in a
// folder (releaseProxy); everything else comes from the module cache.
func TestRequirable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module outside the workspace")
	}
	_, v, env := releaseProxy(t)
	app := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/adopter\n\ngo 1.27\n\nrequire github.com/wardlab/ward/kms/awskms " + v + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/awskms"
)

func main() {
	ctx := context.Background()
	svc, err := awskms.New(ctx, awskms.Config{KeyID: "alias/app", Region: "eu-west-1"})
	fmt.Println(svc != nil, err)
	kr, _ := keyring.New(keyring.AES256GCM)
	col, _ := field.NewColumn(kr, "notes", "body")
	ct, err := col.Seal(field.RowInt(1), []byte("hello"))
	fmt.Println(ct.Valid(), err)
}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := goCmd(t, app, env, "mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy in a module outside the workspace: %v\n%s", err, out)
	}
	if out, err := goCmd(t, app, env, "build", "-o", filepath.Join(app, "adopter"), "."); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mod, _ := os.ReadFile(filepath.Join(app, "go.mod"))
	if strings.Contains(string(mod), "replace") {
		t.Fatalf("the adopter's go.mod needed a replace:\n%s", mod)
	}
	t.Logf("built with no replace:\n%s", mod)
}
