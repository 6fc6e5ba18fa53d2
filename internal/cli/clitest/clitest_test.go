package clitest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

// TestToyBinary runs both checks on a toy binary whose one flag is set by
// a test of its folder and shown in a document.
func TestToyBinary(t *testing.T) {
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	for _, d := range Docs {
		os.WriteFile(filepath.Join(repo, d), nil, 0o644)
	}
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("```sh\n./toy run --n 3   # three times\n```\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "toy_test.go"), []byte("package main\n\nfunc TestRun(t *testing.T) {\n\trun(\"run\", \"--n\", \"3\")\n}\n"), 0o644)
	root := func() *cobra.Command {
		r := &cobra.Command{Use: "toy"}
		run := &cobra.Command{Use: "run", Run: func(*cobra.Command, []string) {}}
		run.Flags().Int("n", 1, "")
		r.AddCommand(run)
		return r
	}
	FlagTable(t, root(), map[string]string{"toy run --n": "TestRun"}, repo)
	DocCommands(t, "toy", repo, 1, root)
}
