// Command ward-lab is ward's lab: it reproduces the four field reports'
// experiments on this machine, side by side with ward, and writes CSV,
// JSON, an HTML report with charts and a Markdown summary.
//
// Usage:
//
//	ward-lab bench [scenario...] [--quick] [--out DIR]
//	ward-lab report DIR | ward-lab report --compare DIR_A DIR_B
//
// Exit codes: 0 success; 2 usage or any other error. Errors go to stderr
// as "ward-lab: error: …", with a "hint:" line when the fix is known.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/scenarios"
)

// app carries what every command needs; tests build their own.
type app struct {
	stdout, stderr io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A scenario measured in a child process (another GODEBUG, a fresh
	// heap) re-executes this binary; serve it before anything else.
	if served, err := lab.ServeChild(ctx, scenarios.All(), os.Args[1:]); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "ward-lab: error:", err)
			os.Exit(cli.ExitUsage)
		}
		os.Exit(cli.ExitOK)
	}
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(a.run(ctx, os.Args[1:]))
}

// run executes one command line and returns the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	return cli.Run(ctx, a.newRootCmd(), args, nil, a.stdout, a.stderr, dburl.PoolerHint)
}

// newRootCmd builds the command tree.
func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ward-lab",
		Short: "Measure what protecting data costs: the field reports' experiments beside ward's",
	}
	root.AddCommand(a.newBenchCmd(), a.newReportCmd())
	return root
}
