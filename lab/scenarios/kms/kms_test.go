package kmslab

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/wardlab/ward/lab"
)

// TestScenario runs the quick profile against an in-process local KMS and
// checks every method, added RTT and seed quote is reported.
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
	got := map[string]bool{}
	for _, r := range env.Results() {
		got[r.Case+"|"+r.Metric] = true
	}
	for _, c := range []string{"legacy-aes-256-cbc-fixed-iv/local/encrypt", "field-local-key/local/decrypt",
		"kms-per-call/8ms/encrypt", "envelope-cached/1ms/decrypt", "envelope-per-message/0ms/encrypt"} {
		if !got[c+"|total_time"] || !got[c+"|op_latency"] {
			t.Errorf("missing %s", c)
		}
	}
	for _, c := range []string{"envelope-vs-per-call/1ms|speedup", "envelope-vs-field/0ms|ratio", "seed/aws-kms/encrypt|total_time"} {
		if !got[c] {
			t.Errorf("missing %s", c)
		}
	}
}
