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
		{caseKey{SendMessage, Encrypted}.name(), "requests_per_second"}, {caseKey{LoadConversation, Encrypted}.name(), "request_latency"},
		{caseKey{SendMessage, Encrypted}.name(), "request_cpu"}, {caseKey{LoadConversation, Plaintext}.name(), "request_cpu"}} {
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

// TestPercent: a cost is printed as a percentage only when its spread
// stays above 0; otherwise, and whenever the median is below 0 (the
// encrypted service does all the plaintext one does), it is noise.
func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		med, p05, p95 float64
		want          string
	}{
		{1.04, 1.01, 1.12, "+4 % (p05–p95 +1 % to +12 %)"},
		{1.04, 0.97, 1.12, "within noise (p05–p95 -3 % to +12 %)"},
		{0.98, 0.95, 0.99, "within noise (p05–p95 -5 % to -1 %)"},
	} {
		r := lab.Result{Unit: "x", N: 60, Median: tc.med, P05: tc.p05, P95: tc.p95}
		if got := percent(r); got != tc.want {
			t.Errorf("%v: %q, want %q", tc, got, tc.want)
		}
	}
}
