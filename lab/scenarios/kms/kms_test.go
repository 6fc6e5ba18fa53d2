package kmslab

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/wardlab/ward/lab"
)

// TestScenario runs the quick profile against an in-process local KMS and
// checks every method, added RTT, cold row and quote is reported, with
// per-round samples, and that the section builds.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the KMS scenario")
	}
	if n := utf8.RuneCountInString(Text); n != 500 {
		t.Fatalf("text has %d characters", n)
	}
	env := lab.NewEnv("kms", true, nil, nil)
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	rs := lab.Results(env.Results())
	for _, c := range []caseKey{{"legacy-aes-256-cbc-fixed-iv", "0ms", "encrypt"}, {"field-local-key", "0ms", "decrypt"},
		{"kms-per-call", "8ms", "encrypt"}, {"envelope-cached", "1ms", "decrypt"}, {"envelope-per-message", "0ms", "encrypt"}} {
		if r, ok := rs.Get(c.name(), "s_per_1000"); !ok || r.N != 11 || r.Median <= 0 {
			t.Errorf("%s: %+v", c.name(), r)
		}
	}
	if _, ok := rs.Get(caseKey{"kms-per-call", "8ms", "encrypt"}.name()+"/cold", "first_op"); !ok {
		t.Error("no cold row")
	}
	for _, c := range []string{vsPerCallCase("1ms") + "|speedup", vsFieldCase("0ms") + "|ratio", "field-report/aws-kms/encrypt|s_per_1000"} {
		cas, metric, _ := cut(c)
		if _, ok := rs.Get(cas, metric); !ok {
			t.Errorf("missing %s", c)
		}
	}
	// The cached envelope's ratio to the field layer is paired round by
	// round from warm batches (one per interleaved round), never from the
	// cold first operation: its speed itself is the lab's to show, not a
	// test's to assert (a loaded machine moves it).
	if r, _ := rs.Get(vsFieldCase("0ms"), "ratio"); r.N != 11 || r.Unit != "x" {
		t.Errorf("envelope over a local key: %d paired rounds in %q, want 11 in x", r.N, r.Unit)
	}
	sec, err := Scenario{}.Report(rs)
	if err != nil || len(sec.Tables) != 2 || len(sec.Charts) != 1 || len(sec.Headlines) != 4 {
		t.Fatalf("section %+v %v", sec, err)
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '|' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
