package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// sqlState is a driver's error with a SQLSTATE, as pgx's PgError.
type sqlState string

func (e sqlState) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlState) SQLState() string { return string(e) }

// TestRun: exit codes, the error line and the hint, for each kind; a
// pooler's prepared-statement errors get the hint naming the setting.
func TestRun(t *testing.T) {
	if h := PoolerHint(sqlState("26000")); !strings.Contains(h, "default_query_exec_mode=exec") {
		t.Fatalf("the pooler hint does not name the setting: %q", h)
	}
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
			"tool: error: reading: SQLSTATE 26000\nhint: " + PoolerHint(sqlState("26000")) + "\n"},
		{sqlState("42P05"), nil, ExitUsage, "tool: error: SQLSTATE 42P05\nhint: " + PoolerHint(sqlState("42P05")) + "\n"},
		{sqlState("42P01"), nil, ExitUsage, "tool: error: SQLSTATE 42P01\n"},
	} {
		root := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return tc.err }}
		var out, errb bytes.Buffer
		if code := Run(context.Background(), root, tc.args, nil, &out, &errb); code != tc.code || errb.String() != tc.out {
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

// TestScrub: every secret of 3 bytes or more is replaced in what is
// written; shorter ones are left (they would mangle the rest).
func TestScrub(t *testing.T) {
	var b strings.Builder
	w := Scrub(&b, []string{"hunter2", "p@ss", "ab", ""})
	fmt.Fprintf(w, "lookup ss: user=ward password=hunter2 and p@ss@host (ab)\n")
	if got := b.String(); got != "lookup ss: user=ward password=REDACTED and REDACTED@host (ab)\n" {
		t.Fatalf("%q", got)
	}
	if Scrub(&b, []string{"ab"}) != io.Writer(&b) {
		t.Fatal("no secret to scrub, yet a wrapper")
	}
}
