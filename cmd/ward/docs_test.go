package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/internal/cli/clitest"
)

// TestDocsCommands: every ward command line the documentation shows names
// a command that exists, with flags it has and values they accept.
func TestDocsCommands(t *testing.T) {
	clitest.DocCommands(t, "ward", "../..", 30, func() *cobra.Command { return (&app{}).newRootCmd() })
}
