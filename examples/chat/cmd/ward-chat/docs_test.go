package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/internal/cli"
)

// TestDocsCommands: every ward-chat command line the documentation shows names
// a command that exists, with flags it has and values they accept.
func TestDocsCommands(t *testing.T) {
	root := "../../../.."
	var docs []string
	for _, f := range []string{"README.md", "CONTRIBUTING.md", "docs/CLI.md", "docs/LIBRARY.md", "docs/ADOPTING.md", "docs/LAB.md"} {
		docs = append(docs, filepath.Join(root, f))
	}
	cmds, err := cli.DocCommands("ward-chat", docs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 5 {
		t.Fatalf("found %d ward-chat command lines: is the extraction stale?", len(cmds))
	}
	for _, c := range cmds {
		c.File = filepath.Base(c.File)
		if err := cli.CheckDocCommand(newRoot(&options{}, io.Discard), c); err != nil {
			t.Error(err)
		}
	}
}
