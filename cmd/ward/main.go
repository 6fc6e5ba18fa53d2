// Command ward is ward's operator CLI: it manages keyrings, encrypts and
// rotates database columns, hashes passwords and talks to the KMS.
//
// Usage:
//
//	ward keyring new|add|rotate|promote|disable|enable|list|gen-master-key
//	ward encrypt|decrypt [--context S | --table T --column C --row R]
//	ward reseal --db URL --table T --column C [--dry-run]
//	ward encrypt-column --db URL --table T --column C [--text]
//	ward password hash|verify|inspect|calibrate
//	ward kms encrypt|decrypt|info
//
// Secrets come from files, the environment or a no-echo prompt on the
// terminal, never from argv.
//
// Exit codes: 0 success; 1 a decryption or verification failed; 2 usage or
// any other error. Errors go to stderr as "ward: error: …", with a "hint:"
// line when the fix is known.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/sqltable"

	_ "github.com/wardlab/ward/kms/awskms" // registers awskms://
)

// app carries what every command needs; tests build their own.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// prompt reads a secret without echo; nil disables prompting.
	prompt func(prompt string) ([]byte, error)

	keyringPath   string
	masterKeyFile string
	kmsFlag       string
	dbs           []string // keyring commands' --db: the databases whose ledgers to check
	// commitNotice is how long a commit waits before the command says so
	// (commitWaitNotice); 0 is 5 s.
	commitNotice time.Duration
}

// deprecated warns on stderr that a renamed or removed verb or flag was
func (a *app) deprecated(what, instead string) {
	fmt.Fprintf(a.stderr, "ward: warning: %s is deprecated: %s\n", what, instead)
}

// oldBoolFlag keeps old as the hidden spelling of cmd's bool flag now for
// one release: it sets the same variable, and using it warns. It wraps
// cmd.RunE, so it is called after RunE is set.
func (a *app) oldBoolFlag(cmd *cobra.Command, p *bool, old, now string) {
	cmd.Flags().BoolVar(p, old, false, "deprecated: --"+now)
	cmd.Flags().MarkHidden(old)
	cmd.Flags().SetAnnotation(old, cli.DeprecatedFlag, nil)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if c.Flags().Changed(old) {
			a.deprecated("--"+old, "use --"+now)
		}
		return run(c, args)
	}
}

// writeJSON prints v as indented JSON.
func (a *app) writeJSON(v any) error {
	e := json.NewEncoder(a.stdout)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func main() {
	// Ctrl-C and SIGTERM cancel the command's context: jobs stop at a
	// batch boundary (a batch in flight is rolled back, never half done).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, prompt: promptSecret}
	os.Exit(a.run(ctx, os.Args[1:]))
}

// run executes one command line and returns the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	// The databases' passwords are scrubbed from everything printed,
	// drivers' messages included.
	secrets := dburl.CommandSecrets(args, a.getenv)
	a.stdout, a.stderr = dburl.Scrub(a.stdout, secrets), dburl.Scrub(a.stderr, secrets)
	dburl.LogDriverTo(a.stderr)
	ctx = sqltable.WithCommitNotice(ctx, cmp.Or(a.commitNotice, 5*time.Second), a.commitWaitNotice)
	return cli.Run(ctx, a.newRootCmd(), args, a.stdin, a.stdout, a.stderr, dburl.PoolerHint, commitHint)
}

// commitWaitNotice says that a commit has waited: on PostgreSQL, for a
// synchronous standby that may be down.
func (a *app) commitWaitNotice(waited time.Duration) {
	fmt.Fprintf(a.stderr, "ward: the database has not confirmed a commit for %v: PostgreSQL waits for its synchronous standby (synchronous_standby_names) to apply ward's writes, for as long as it is down. Bring it back, or take it out of synchronous_standby_names; Ctrl-C stops waiting, but the write may then have been applied\n",
		waited.Round(time.Second))
}

// commitHint is the hint for a write whose commit the database did not
// confirm: it may have been applied.
func commitHint(err error) string {
	if !errors.Is(err, sqltable.ErrCommitUnknown) {
		return ""
	}
	return "the write may have been applied (a PostgreSQL primary keeps a commit whose wait for its synchronous standby was stopped): 'ward ledger --db URL' and 'ward subject audit --db URL' show the state, and running the command again finishes it; a failover to that standby now needs 'ward ledger recover' (docs/OPERATIONS.md, \"An interrupted write\")"
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ward",
		Short:         "Operate ward: keyrings, column encryption and rotation, passwords, KMS",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&a.keyringPath, "keyring", "", "keyring file (default $WARD_KEYRING)")
	root.PersistentFlags().StringVar(&a.masterKeyFile, "master-key-file", "", "file holding the base64 master key (default: the key itself, base64, in $WARD_MASTER_KEY)")
	root.PersistentFlags().StringVar(&a.kmsFlag, "kms", "", "the key service, instead of the master key: a KMS key URL (awskms://alias/NAME?region=R, local://PATH) that seals keyrings and, with encrypt --envelope, data keys (default $WARD_KMS)")
	root.AddCommand(
		a.newKeyringCmd(),
		a.newEncryptCmd(),
		a.newDecryptCmd(),
		a.newResealCmd(),
		deprecated(a.newResealCmd(), "rotate", "ward reseal", a.stderr),
		a.newEncryptColumnCmd(),
		a.newKMSCmd(),
		a.newLedgerCmd(),
		a.newFleetCmd(),
		a.newPasswordCmd(),
		a.newSubjectCmd(),
		a.newGrantCmd(),
	)
	return root
}

// deprecated turns cmd into the hidden, deprecated old name of the command
// now: it works as before for one release, with a warning on stderr naming
// the new command.
func deprecated(cmd *cobra.Command, old, now string, stderr io.Writer) *cobra.Command {
	cmd.Use = old + strings.TrimPrefix(cmd.Use, cmd.Name())
	cmd.Hidden = true
	cmd.Short = "Deprecated: use '" + now + "'"
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		fmt.Fprintf(stderr, "ward: warning: '%s' is deprecated and will be removed in the next release: use '%s'\n", c.CommandPath(), now)
		return run(c, args)
	}
	return cmd
}
