package chatlab

import (
	"context"
	"testing"

	"github.com/wardlab/ward/lab"
)

func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the chat service")
	}
	env := lab.NewEnv("chat", true, nil, nil)
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	got := map[string]lab.Result{}
	for _, r := range env.Results() {
		got[r.Case+"|"+r.Metric] = r
	}
	for _, k := range []string{"send-message/plaintext|request_latency", "send-message/encrypted|requests_per_second",
		"load-conversation-50/encrypted|request_latency", "load-conversation-50/encryption-cost|overhead"} {
		if r, ok := got[k]; !ok || (r.Metric != "overhead" && r.N != 60) {
			t.Errorf("missing %s (%+v)", k, r)
		}
	}
}
