// Command ward is ward's operator CLI: it manages keyrings, encrypts and
// rotates database columns, hashes passwords and talks to the KMS.
//
// Usage:
//
//	ward keyring new|add|rotate|promote|disable|enable|list|gen-master-key
//	ward encrypt|decrypt [--context S | --table T --column C --row R]
//	ward rotate --db URL --table T --column C [--dry-run]
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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	_ "github.com/wardlab/ward/kms/awskms" // registers awskms://
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1 // decryption or verification failed
	exitUsageErr = 2 // usage or other error
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
}

// cliError is an error with an exit code and an optional hint.
type cliError struct {
	code int
	err  error
	hint string
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

// deprecated warns on stderr that a renamed or removed verb or flag was
// used; it keeps working as a hidden alias.
func (a *app) deprecated(what, instead string) {
	fmt.Fprintf(a.stderr, "ward: warning: %s is deprecated: %s\n", what, instead)
}

// writeJSON prints v as indented JSON.
func (a *app) writeJSON(v any) error {
	e := json.NewEncoder(a.stdout)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func failed(err error, hint string) error { return &cliError{code: exitFailed, err: err, hint: hint} }
func usage(err error, hint string) error  { return &cliError{code: exitUsageErr, err: err, hint: hint} }

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
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(a.stderr, "ward: error: %v\n", err)
	var ce *cliError
	if errors.As(err, &ce) {
		if ce.hint != "" {
			fmt.Fprintf(a.stderr, "hint: %s\n", ce.hint)
		}
		return ce.code
	}
	return exitUsageErr
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ward",
		Short:         "Operate ward: keyrings, column encryption and rotation, passwords, KMS",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&a.keyringPath, "keyring", "", "keyring file (default $WARD_KEYRING)")
	root.PersistentFlags().StringVar(&a.masterKeyFile, "master-key-file", "", "file holding the base64 master key (default $WARD_MASTER_KEY)")
	root.PersistentFlags().StringVar(&a.kmsFlag, "kms", "", "the key service, instead of the master key: a KMS key URL (awskms://alias/NAME?region=R, local://PATH) that seals keyrings and, with encrypt --envelope, data keys (default $WARD_KMS)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err, "see ward --help") })
	root.AddCommand(
		a.newKeyringCmd(),
		a.newEncryptCmd(),
		a.newDecryptCmd(),
		a.newRotateCmd(),
		a.newEncryptColumnCmd(),
		a.newKMSCmd(),
		a.newPasswordCmd(),
	)
	return root
}
