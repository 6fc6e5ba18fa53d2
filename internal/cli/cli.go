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
	"strings"

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
// error and its hint to stderr as "name: error: …".
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
	if h := PoolerHint(err); h != "" {
		hint = h
	}
	if hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return code
}

// PoolerHint names the fix when err is PostgreSQL's answer to a client
// whose prepared statements a pooler in transaction mode (PgBouncer,
// RDS Proxy, Supavisor) handed to another server connection: SQLSTATE
// 26000 (prepared statement does not exist) or 42P05 (already exists).
// It is "" for any other error.
func PoolerHint(err error) string {
	var pg interface{ SQLState() string } // pgx's *pgconn.PgError, without importing a driver
	if !errors.As(err, &pg) || (pg.SQLState() != "26000" && pg.SQLState() != "42P05") {
		return ""
	}
	return "a connection pooler in transaction mode (PgBouncer, RDS Proxy, Supavisor) sits between ward and PostgreSQL: add default_query_exec_mode=exec to the database URL (docs/OPERATIONS.md, \"Poolers\")"
}

// Scrub returns a writer that writes to w with every occurrence of each
// secret replaced by REDACTED, so that no message — a driver's own
// included — prints a password the command line or the environment
// handed to a database. Secrets shorter than 3 bytes are left alone
// (they would mangle everything else).
func Scrub(w io.Writer, secrets []string) io.Writer {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= 3 {
			pairs = append(pairs, s, "REDACTED")
		}
	}
	if len(pairs) == 0 {
		return w
	}
	return &scrubber{w: w, r: strings.NewReplacer(pairs...)}
}

type scrubber struct {
	w io.Writer
	r *strings.Replacer
}

func (s *scrubber) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
