package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

// sqlState is a driver's error with a SQLSTATE, as pgx's PgError.
type sqlState string

func (e sqlState) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlState) SQLState() string { return string(e) }

// poolerHint stands for dburl.PoolerHint, a hint that knows more than an
// error's own.
func poolerHint(err error) string {
	var s sqlState
	if errors.As(err, &s) && (s == "26000" || s == "42P05") {
		return "add default_query_exec_mode=exec"
	}
	return ""
}

// TestRun: exit codes, the error line and the hint, for each kind; a hint
// Run is given overrides the error's own.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		err  error
		args []string
		code int
		out  string
	}{
		{nil, nil, ExitOK, ""},
		{Failed(errors.New("bad tag"), "wrong key?"), nil, ExitFailed, "tool: error: bad tag\nhint: wrong key?\n"},
		{Usage(errors.New("no --db"), ""), nil, ExitUsage, "tool: error: no --db\n"},
		{errors.New("other"), nil, ExitUsage, "tool: error: other\n"},
		{nil, []string{"--nope"}, ExitUsage, "tool: error: unknown flag: --nope\nhint: see tool --help\n"},
		{Failed(fmt.Errorf("reading: %w", sqlState("26000")), "other hint"), nil, ExitFailed,
			"tool: error: reading: SQLSTATE 26000\nhint: " + poolerHint(sqlState("26000")) + "\n"},
		{sqlState("42P05"), nil, ExitUsage, "tool: error: SQLSTATE 42P05\nhint: " + poolerHint(sqlState("42P05")) + "\n"},
		{sqlState("42P01"), nil, ExitUsage, "tool: error: SQLSTATE 42P01\n"},
	} {
		root := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return tc.err }}
		var out, errb bytes.Buffer
		if code := Run(context.Background(), root, tc.args, nil, &out, &errb, poolerHint); code != tc.code || errb.String() != tc.out {
			t.Errorf("%v %v: %d %q", tc.err, tc.args, code, errb.String())
		}
	}
}

// TestProgress: off a terminal, progress is plain lines, and quiet means
// none.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, "job", 10, false)
	p.Set(10, 10)
	p.Finish()
	if b.Len() == 0 {
		t.Fatal("no progress line off a terminal")
	}
	b.Reset()
	q := NewProgress(&b, "job", 10, true)
	q.Set(10, 10)
	q.Finish()
	if b.Len() != 0 {
		t.Fatalf("quiet progress wrote %q", b.String())
	}
}
