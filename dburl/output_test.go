package dburl

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

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

// sqlState is a driver's error with a SQLSTATE, as pgx's PgError.
type sqlState string

func (e sqlState) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlState) SQLState() string { return string(e) }

// TestPoolerHint: PostgreSQL's answers to a client whose prepared
// statements a transaction pooler moved (26000, 42P05) name the fix, in
// an error chain too; other errors get no hint.
func TestPoolerHint(t *testing.T) {
	for _, code := range []string{"26000", "42P05"} {
		if h := PoolerHint(fmt.Errorf("reading: %w", sqlState(code))); !strings.Contains(h, "default_query_exec_mode=exec") {
			t.Fatalf("%s: %q", code, h)
		}
	}
	for _, err := range []error{sqlState("23505"), io.EOF, nil} {
		if h := PoolerHint(err); h != "" {
			t.Fatalf("%v: %q", err, h)
		}
	}
}
