package walls

import (
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
// MaxLibraryRequirements direct requirements (README, "Modules").
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
		{ImportPath: Module + "/kms", Imports: []string{"github.com/hashicorp/golang-lru/v2/expirable", Module + "/internal/dburl"}},
		{ImportPath: Module + "/newthing"},
	}
	got := strings.Join(LibraryViolations(pkgs), "\n")
	for _, want := range []string{
		"field imports " + Module + "/lab",
		"keyring imports modernc.org/sqlite",
		"kms imports " + Module + "/internal/dburl",
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
