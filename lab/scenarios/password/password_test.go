package passwordlab

import (
	"context"
	"testing"

	"github.com/wardlab/ward/lab"
)

// TestScenario runs the quick profile and checks every case is reported
// with sane values, and the seed's figures are labelled as quotes.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real password hashes")
	}
	env := lab.NewEnv("password", true, nil, nil)
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	got := map[string]lab.Result{}
	for _, r := range env.Results() {
		got[r.Case+"|"+r.Metric] = r
		if r.Median <= 0 || r.P05 > r.Median || r.Median > r.P95 {
			t.Errorf("bad summary: %+v", r)
		}
	}
	for _, c := range Configs {
		if r, ok := got[c.name+"|hash_latency"]; !ok || r.N != 5 {
			t.Errorf("missing %s: %+v", c.name, r)
		}
	}
	for _, n := range []string{"1", "2", "10"} {
		for _, mode := range []string{"unlimited", "limiter"} {
			for _, m := range []string{"burst_time", "request_latency", "throughput", "peak_heap", "burst_vs_ideal"} {
				if _, ok := got["signup-burst-"+n+"/"+mode+"|"+m]; !ok {
					t.Errorf("missing burst %s/%s %s", n, mode, m)
				}
			}
		}
	}
	if r := got["seed/spring-argon2-v5.8|hash_latency"]; r.Source != "seed" || r.Median != 450 {
		t.Errorf("seed quote: %+v", r)
	}
}
