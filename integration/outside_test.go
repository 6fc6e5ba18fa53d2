package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyExample copies an example's package tree from the checkout to dst
// as an adopter would: every file but tests and test data, with the
// example's own import paths rewritten from the examples module to mod.
func copyExample(t *testing.T, src, from, mod, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".go") {
			b = []byte(strings.ReplaceAll(string(b), `"`+from, `"`+mod))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExamplesBuildOutside: the chat and the adoption example, copied into
// modules of their own outside the workspace (as an adopter copies them),
// build against the library, kms/awskms and contrib/otel at their release version from
// a module proxy, with no replace directive: they import nothing under
// ward's internal/ ("use of internal package … not allowed" otherwise),
// and everything they need is public.
func TestExamplesBuildOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modules outside the workspace")
	}
	_, v, env := releaseProxy(t)
	for _, ex := range []string{"chat", "adopt"} {
		t.Run(ex, func(t *testing.T) {
			app := t.TempDir()
			mod := "example.com/" + ex
			copyExample(t, filepath.Join("..", "examples", ex), "github.com/wardlab/ward/examples/"+ex, mod, app)
			gomod := "module " + mod + "\n\ngo 1.27\n\nrequire (\n\tgithub.com/wardlab/ward " + v + "\n\tgithub.com/wardlab/ward/kms/awskms " + v + "\n\tgithub.com/wardlab/ward/contrib/otel " + v + "\n)\n"
			if err := os.WriteFile(filepath.Join(app, "go.mod"), []byte(gomod), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := goCmd(t, app, env, "mod", "tidy"); err != nil {
				t.Fatalf("go mod tidy in %s outside the workspace: %v\n%s", mod, err, out)
			}
			if out, err := goCmd(t, app, env, "build", "-o", filepath.Join(app, "bin")+string(filepath.Separator), "./..."); err != nil {
				t.Fatalf("go build ./... in %s: %v\n%s", mod, err, out)
			}
			b, _ := os.ReadFile(filepath.Join(app, "go.mod"))
			if strings.Contains(string(b), "replace") {
				t.Fatalf("%s needed a replace:\n%s", mod, b)
			}
		})
	}
}
