package walls

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityNamesRealTests: every test SECURITY.md names as the proof of
// a promise ("`pkg` `TestX`, `TestY`") exists in that package's folder.
func TestSecurityNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	group := regexp.MustCompile("`([a-z0-9/]+)` ((?:`(?:Test|Fuzz)[A-Za-z0-9]+`(?:, )?)+)")
	name := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9]+)`")
	n := 0
	for _, m := range group.FindAllStringSubmatch(string(doc), -1) {
		dir := filepath.Join("../..", m[1])
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		var src strings.Builder
		for _, f := range files {
			b, _ := os.ReadFile(f)
			src.Write(b)
		}
		for _, tm := range name.FindAllStringSubmatch(m[2], -1) {
			n++
			if !strings.Contains(src.String(), "func "+tm[1]+"(") {
				t.Errorf("SECURITY.md names %s in %s, which has no such test", tm[1], m[1])
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d test names in SECURITY.md: is the pattern stale?", n)
	}
}

// TestReadmeCounts checks the counts the README states in words: the
// field reports it answers, and the walls' numbers, which the walls tests
// enforce (MaxLibraryRequirements, the CLI's size in cmd/ward).
func TestReadmeCounts(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	reports, err := os.ReadFile("../../FIELD-REPORTS.md")
	if err != nil {
		t.Fatal(err)
	}
	n := len(regexp.MustCompile(`(?m)^## `).FindAll(reports, -1))
	words := map[int]string{1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
	for _, c := range []struct {
		what string
		n    int
		want string
	}{
		{"field reports (FIELD-REPORTS.md sections)", n, words[n] + " field reports"},
		{"direct requirements of the library", MaxLibraryRequirements, "more than " + words[MaxLibraryRequirements] + " direct"},
		{"the CLI's size", MaxCLIMiB, fmt.Sprintf("larger than %d MiB", MaxCLIMiB)},
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), c.want) {
			t.Errorf("README does not say %q (%s: %d)", c.want, c.what, c.n)
		}
	}
}
