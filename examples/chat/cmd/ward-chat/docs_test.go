package main

import (
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/internal/cli/clitest"
)

// TestDocsCommands: every ward-chat command line the documentation shows names
// a command that exists, with flags it has and values they accept.
func TestDocsCommands(t *testing.T) {
	clitest.DocCommands(t, "ward-chat", "../../../..", 5, func() *cobra.Command { return newRoot(&options{}, io.Discard) })
}
