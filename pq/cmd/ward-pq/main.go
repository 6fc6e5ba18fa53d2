// Command ward-pq runs and measures post-quantum key exchange between two
// processes or hosts: ward's minimal protocol (package handshake) and real
// TLS 1.3 with post-quantum groups and ML-DSA certificates (package pqtls).
//
// Usage:
//
//	ward-pq handshake serve|dial
//	ward-pq tls serve|dial
//
// Exit codes: 0 success; 1 a handshake failed to authenticate; 2 usage or
// any other error. Errors go to stderr as "ward-pq: error: …", with a
// "hint:" line when the fix is known.
package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/internal/cli"
)

// app carries what every command needs; tests build their own.
type app struct {
	stdout, stderr io.Writer
}

// writeJSON prints v as indented JSON.
func (a *app) writeJSON(v any) error {
	e := json.NewEncoder(a.stdout)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(a.run(ctx, os.Args[1:]))
}

// run executes one command line and returns the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	return cli.Run(ctx, a.newRootCmd(), args, nil, a.stdout, a.stderr)
}

// newRootCmd builds the command tree.
func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ward-pq",
		Short: "Run and measure post-quantum key exchange: ward's minimal protocol and TLS 1.3",
	}
	root.AddCommand(a.newHandshakeCmd(), a.newTLSCmd())
	return root
}

// milliseconds converts a duration to fractional milliseconds.
func milliseconds(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// summary returns the count, median, 5th and 95th percentiles of samples
// (nearest rank).
func summary(samples []float64) (n int, median, p05, p95 float64) {
	if len(samples) == 0 {
		return 0, 0, 0, 0
	}
	s := slices.Sorted(slices.Values(samples))
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	return len(s), q(0.5), q(0.05), q(0.95)
}
