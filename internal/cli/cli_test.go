package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestProgressTerminal: on a terminal, one line redrawn in place (throttled
// to ten a second, the last always drawn) with a bar, the percentage, the
// count and the time left at the rate so far, and a newline at the end.
func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	clock := time.Unix(0, 0)
	p := &Progress{w: &b, desc: "job", tty: true, now: func() time.Time { return clock }, start: clock}
	clock = clock.Add(10 * time.Second)
	p.Set(25, 100)
	want := "\r\x1b[Kjob [======                  ]  25% 25/100 30s left"
	if b.String() != want {
		t.Fatalf("first draw %q, want %q", b.String(), want)
	}
	b.Reset()
	clock = clock.Add(50 * time.Millisecond)
	p.Set(26, 100)
	if b.Len() != 0 {
		t.Fatalf("drew again within 100 ms: %q", b.String())
	}
	p.Set(100, 100)
	if !strings.HasSuffix(b.String(), "[========================] 100% 100/100") {
		t.Fatalf("last draw %q", b.String())
	}
	b.Reset()
	p.Finish()
	p.Finish()
	if b.String() != "\n" {
		t.Fatalf("finish wrote %q, want one newline", b.String())
	}
	if got := p.line(5, 0, time.Second); !strings.Contains(got, "100% 5/0") {
		t.Fatalf("a total of 0 drew %q", got)
	}
}
