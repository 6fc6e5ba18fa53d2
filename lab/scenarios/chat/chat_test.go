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
	rs := lab.Results(env.Results())
	for _, k := range []struct{ cas, metric string }{{caseKey{SendMessage, Plaintext}.name(), "request_latency"},
		{caseKey{SendMessage, Encrypted}.name(), "requests_per_second"}, {caseKey{LoadConversation, Encrypted}.name(), "request_latency"}} {
		if r, ok := rs.Get(k.cas, k.metric); !ok || r.N != QuickRequests {
			t.Errorf("missing %s %s (%+v)", k.cas, k.metric, r)
		}
	}
	if r, ok := rs.Get(costCase(LoadConversation), "encryption_cost"); !ok || r.N != QuickRequests || r.Unit != "x" {
		t.Errorf("cost: %+v", r)
	}
	sec, err := Scenario{}.Report(rs)
	if err != nil || len(sec.Tables[0].Rows) != 2 || len(sec.Headlines) != 2 {
		t.Fatalf("section: %v %+v", err, sec)
	}
}
