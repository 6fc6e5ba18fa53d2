package walls

import (
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
