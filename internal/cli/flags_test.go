package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// TestUncoveredFlags is the test of the flag tables: a flag without an
// entry, an entry naming a test that never sets the flag on a line with
// its command, a missing test and an entry for no flag are each reported;
// hidden commands and deprecated flags are not listed.
func TestUncoveredFlags(t *testing.T) {
	root := &cobra.Command{Use: "bin"}
	root.PersistentFlags().String("keyring", "", "")
	run := &cobra.Command{Use: "run", Run: func(*cobra.Command, []string) {}}
	run.Flags().Int("batch", 1, "")
	run.Flags().Int("workers", 1, "")
	run.Flags().Bool("old", false, "")
	run.Flags().SetAnnotation("old", DeprecatedFlag, nil)
	hidden := &cobra.Command{Use: "rotate", Hidden: true, Run: func(*cobra.Command, []string) {}}
	hidden.Flags().Int("batch", 1, "")
	root.AddCommand(run, hidden)
	if got := Flags(root); !slices.Equal(got, []string{"bin --keyring", "bin run --batch", "bin run --workers"}) {
		t.Fatalf("Flags: %q", got)
	}
	dir := t.TempDir()
	src := "package p\n\nfunc TestA(t *testing.T) {\n\trun(\"run\", \"--batch\", \"5\")\n\tother(\"--workers\")\n}\n"
	os.WriteFile(filepath.Join(dir, "a_test.go"), []byte(src), 0o644)
	os.MkdirAll(filepath.Join(dir, "testdata"), 0o755)
	os.WriteFile(filepath.Join(dir, "testdata", "s.txtar"), []byte("exec bin --keyring k run\n"), 0o644)
	bad, err := UncoveredFlags(root, map[string]string{
		"bin --keyring":     "testdata/s.txtar",
		"bin run --batch":   "TestA",
		"bin run --workers": "TestA",
		"bin run --gone":    "TestA",
	}, dir)
	want := []string{
		"bin run --gone: in the flag table, but no such flag",
		"bin run --workers: TestA never sets it (no line names the command and the flag)",
	}
	if err != nil || !slices.Equal(bad, want) {
		t.Fatalf("got %q, %v", bad, err)
	}
	bad, _ = UncoveredFlags(root, map[string]string{"bin run --batch": "TestB"}, dir)
	if len(bad) != 3 || bad[0] != "bin --keyring: no entry in the flag table (name a test that sets it and asserts its effect)" {
		t.Fatalf("got %q", bad)
	}
}
