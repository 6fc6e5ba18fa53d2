// Package cli is what ward's binaries (ward, ward-pq, ward-lab) share: one
// error convention and exit codes, and a progress display. It is its own
// module, so that the library never requires cobra or a progress bar.
//
// Errors go to stderr as "NAME: error: …", followed by "hint: …" when the
// fix is known. Exit codes: 0 success, 1 a decryption, verification or
// check failed, 2 usage or any other error.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // a decryption, verification or check failed
	ExitUsage  = 2 // usage or any other error
)

// Error is an error with an exit code and an optional hint.
type Error struct {
	Code int
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Failed is an error that exits 1: something was checked and failed.
func Failed(err error, hint string) error { return &Error{Code: ExitFailed, Err: err, Hint: hint} }

// Usage is an error that exits 2: a usage or other error.
func Usage(err error, hint string) error { return &Error{Code: ExitUsage, Err: err, Hint: hint} }

// Run executes root with args and returns the exit code, printing an
// error and its hint to stderr as "name: error: …". Each of hints is asked
// for a hint that knows more than the error's own (dburl.PoolerHint names
// a pooler's setting): the first that answers wins.
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer, hints ...func(error) string) int {
	root.SetArgs(args)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err, "see "+root.Name()+" --help") })
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: error: %v\n", root.Name(), err)
	var ce *Error
	code, hint := ExitUsage, ""
	if errors.As(err, &ce) {
		code, hint = ce.Code, ce.Hint
	}
	for _, h := range hints {
		if h := h(err); h != "" {
			hint = h
			break
		}
	}
	if hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return code
}
