package walls

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestLibraryWall lists the root module's packages and fails if a library
// package imports anything outside the allow-list.
func TestLibraryWall(t *testing.T) {
	pkgs, err := List("../..", false, "./...")
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range Library {
		if !slices.ContainsFunc(pkgs, func(p Package) bool { return p.ImportPath == lib }) {
			t.Errorf("library package %s not found: update walls.Library", lib)
		}
	}
	for _, v := range LibraryViolations(pkgs) {
		t.Error(v)
	}
}

// TestLibraryPackageDocs: every library package has a package comment.
func TestLibraryPackageDocs(t *testing.T) {
	pkgs, err := List("../..", false, "./...")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if slices.Contains(Library, p.ImportPath) && p.Doc == "" {
			t.Errorf("library package %s has no package comment", p.ImportPath)
		}
	}
}

// TestLibraryRequirements: the library module's go.mod lists at most
// MaxLibraryRequirements direct requirements (README, "Building and testing").
func TestLibraryRequirements(t *testing.T) {
	direct, err := DirectRequirements("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d direct requirements: %v", len(direct), direct)
	if len(direct) > MaxLibraryRequirements {
		t.Fatalf("the library requires %d modules directly, over %d: %v", len(direct), MaxLibraryRequirements, direct)
	}
}

// TestLibraryWallCatches is the test of the test: a library package that
// imports the lab, a database driver or an unknown root package is caught;
// standard, library and allowed imports are not.
func TestLibraryWallCatches(t *testing.T) {
	pkgs := []Package{
		{ImportPath: "fmt", Standard: true},
		{ImportPath: Module + "/field", Imports: []string{"fmt", "database/sql", Module + "/keyring", "golang.org/x/text/unicode/norm", Module + "/lab"}},
		{ImportPath: Module + "/keyring", Imports: []string{"modernc.org/sqlite", "golang.org/x/crypto/chacha20poly1305"}},
		{ImportPath: Module + "/kms", Imports: []string{"github.com/hashicorp/golang-lru/v2/expirable", Module + "/dburl"}},
		{ImportPath: Module + "/newthing"},
	}
	got := strings.Join(LibraryViolations(pkgs), "\n")
	for _, want := range []string{
		"field imports " + Module + "/lab",
		"keyring imports modernc.org/sqlite",
		"kms imports " + Module + "/dburl",
		Module + "/newthing is neither library nor plumbing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("not caught: %s\n(got %s)", want, got)
		}
	}
	for _, ok := range []string{"database/sql", "norm", "chacha20poly1305", "expirable", " " + Module + "/keyring"} {
		if strings.Contains(got, "imports "+strings.TrimSpace(ok)) || strings.Contains(got, ok+",") {
			t.Errorf("allowed import reported: %s\n%s", ok, got)
		}
	}
}

// TestForbiddenDepsCatches: the CLI's check finds a lab package, an
// emulator and a plotting library among a binary's dependencies, and
// nothing in a clean list.
func TestForbiddenDepsCatches(t *testing.T) {
	deps := []Package{
		{ImportPath: "fmt", Standard: true},
		{ImportPath: Module + "/keyring"},
		{ImportPath: Module + "/labels"},
		{ImportPath: Module + "/lab/scenarios"},
		{ImportPath: "github.com/nsmithuk/local-kms/src/handler"},
		{ImportPath: "gonum.org/v1/plot/vg"},
	}
	got := ForbiddenDeps(deps, CLIForbidden)
	want := []string{Module + "/lab/scenarios", "github.com/nsmithuk/local-kms/src/handler", "gonum.org/v1/plot/vg"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := ForbiddenDeps(deps[:3], CLIForbidden); len(got) != 0 {
		t.Fatalf("clean list: %v", got)
	}
}

// TestNoUpwardImports: no package under internal/ (of any module) imports
// package keyring, except the test helpers MayImportKeyring names.
func TestNoUpwardImports(t *testing.T) {
	pkgs, err := List("../..", false, workspacePatterns(t)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range UpwardImports(pkgs) {
		t.Error(v)
	}
}

// TestUpwardImportsCatches is the test of the test.
func TestUpwardImportsCatches(t *testing.T) {
	pkgs := []Package{
		{ImportPath: Module + "/internal/keycore", Imports: []string{"crypto/aes"}},
		{ImportPath: Module + "/internal/keyproto", Imports: []string{Module + "/keyring"}},
		{ImportPath: Module + "/internal/golden", Imports: []string{Module + "/keyring"}},
		{ImportPath: Module + "/ledger", Imports: []string{Module + "/keyring"}},
	}
	got := UpwardImports(pkgs)
	if len(got) != 1 || !strings.Contains(got[0], "internal/keyproto imports") {
		t.Fatalf("UpwardImports = %q, want internal/keyproto alone", got)
	}
}

// TestExampleImportsCatches is the test of the examples' wall (its check,
// over the examples module, is in examples' own tests).
func TestExampleImportsCatches(t *testing.T) {
	pkgs := []Package{
		{ImportPath: Module + "/examples/chat", Imports: []string{Module + "/internal/sqltable", Module + "/field", Module + "/examples/chat/store"}},
		{ImportPath: Module + "/examples/adopt", Imports: []string{Module + "/ledger"}},
		{ImportPath: Module + "/lab/scenarios/chat", Imports: []string{Module + "/dburl"}},
	}
	got := ExampleImports(pkgs)
	if len(got) != 1 || !strings.Contains(got[0], "examples/chat imports "+Module+"/internal/sqltable") {
		t.Fatalf("ExampleImports = %q, want the chat's import alone", got)
	}
}

// workspacePatterns returns a pattern for every module of the workspace
// (go.work), as the README's test command lists them.
func workspacePatterns(t *testing.T) []string {
	t.Helper()
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-f", "{{.Dir}}/...", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.Fields(string(out))
}

// TestExamplesUsePublicAPI: no non-test file of the examples imports a
// package under the root module's internal/ (integration's
// TestExamplesBuildOutside builds them as modules of their own).
func TestExamplesUsePublicAPI(t *testing.T) {
	pkgs, err := List("../..", false, workspacePatterns(t)...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, Module+"/examples/") {
			n++
		}
	}
	if n < 3 {
		t.Fatalf("found %d example packages: is the pattern stale?", n)
	}
	for _, v := range ExampleImports(pkgs) {
		t.Error(v)
	}
}
