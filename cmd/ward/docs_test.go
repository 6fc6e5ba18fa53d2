package main

import (
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/internal/cli"
)

// docs are the documents that show ward's command lines.
var docs = []string{"../../README.md", "../../CONTRIBUTING.md", "../../SECURITY.md", "../../docs/CLI.md", "../../docs/LIBRARY.md", "../../docs/ADOPTING.md"}

// TestDocsCommands: every ward command line the documentation shows names
// a command that exists, with flags it has and values they accept.
func TestDocsCommands(t *testing.T) {
	cmds, err := cli.DocCommands("ward", docs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 30 {
		t.Fatalf("found %d ward command lines in %v: is the extraction stale?", len(cmds), docs)
	}
	for _, c := range cmds {
		c.File = filepath.Base(c.File)
		if err := cli.CheckDocCommand((&app{}).newRootCmd(), c); err != nil {
			t.Error(err)
		}
	}
}
