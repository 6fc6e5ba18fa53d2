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
	for _, k := range []struct{ cas, metric string }{{SendMessage, "request_latency"}, {SendMessage, "requests_per_second"},
		{LoadConversation, "request_latency"}, {SendMessage, "request_cpu"}, {LoadConversation, "request_cpu"}} {
		if r, ok := rs.Get(k.cas, k.metric); !ok || r.N != QuickRequests {
			t.Errorf("missing %s %s (%+v)", k.cas, k.metric, r)
		}
	}
	// What each request sealed and opened, as the service did it: loading
	// opens the 50 messages and seals none; sending seals the message and
	// the reply and opens the context (the new message and up to 49 before).
	for _, k := range []struct {
		op             string
		sealed, opened float64
	}{{LoadConversation, 0, 50}, {SendMessage, 2, 50}} {
		if s, o := rs.Median(k.op, "values_sealed"), rs.Median(k.op, "values_opened"); s != k.sealed || o != k.opened {
			t.Errorf("%s: %v sealed, %v opened; want %v, %v", k.op, s, o, k.sealed, k.opened)
		}
	}
	for _, cas := range []string{SealValue, OpenValue} {
		if r, ok := rs.Get(cas, "cpu_per_value"); !ok || r.Median <= 0 || r.Unit != "ns" {
			t.Errorf("%s: %+v", cas, r)
		}
	}
	if r, ok := rs.Get(costCase(LoadConversation), "encryption_cost"); !ok || r.N != QuickRequests || r.Unit != "x" || r.P05 <= 1 {
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
		{1.04, 1.01, 1.12, "+4.0 % (p05–p95 +1.0 % to +12.0 %)"},
		{1.04, 0.97, 1.12, "within noise (p05–p95 -3.0 % to +12.0 %)"},
		{0.98, 0.95, 0.99, "within noise (p05–p95 -5.0 % to -1.0 %)"},
	} {
		r := lab.Result{Unit: "x", N: 60, Median: tc.med, P05: tc.p05, P95: tc.p95}
		if got := percent(r); got != tc.want {
			t.Errorf("%v: %q, want %q", tc, got, tc.want)
		}
	}
}
