// Package clitest holds the tests every ward binary runs on its own
// command tree: a flag table (every flag has a test that sets it) and the
// command lines of the documentation (each names a real command, flags
// and values).
package clitest

import (
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/internal/cli"
)

// Docs are the documents, relative to the repository's root, whose code
// blocks show command lines.
var Docs = []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "docs/CLI.md", "docs/LIBRARY.md", "docs/ADOPTING.md", "docs/LAB.md"}

// FlagTable fails t for every flag of root without an entry in table
// naming a test of dir (or a script under it) with a line that sets it,
// and for every entry that names no flag (cli.UncoveredFlags).
func FlagTable(t *testing.T, root *cobra.Command, table map[string]string, dir string) {
	t.Helper()
	bad, err := cli.UncoveredFlags(root, table, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// DocCommands fails t for every command line of bin in Docs (under the
// repository's root repo) that names no command, a flag the command lacks
// or a value the flag refuses (cli.CheckDocCommand), and when fewer than
// atLeast lines are found (the extraction went stale). newRoot builds a
// fresh command tree for each line.
func DocCommands(t *testing.T, bin, repo string, atLeast int, newRoot func() *cobra.Command) {
	t.Helper()
	var docs []string
	for _, d := range Docs {
		docs = append(docs, filepath.Join(repo, d))
	}
	cmds, err := cli.DocCommands(bin, docs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < atLeast {
		t.Fatalf("found %d %s command lines in %v: is the extraction stale?", len(cmds), bin, Docs)
	}
	for _, c := range cmds {
		c.File, _ = filepath.Rel(repo, c.File)
		if err := cli.CheckDocCommand(newRoot(), c); err != nil {
			t.Error(err)
		}
	}
}
