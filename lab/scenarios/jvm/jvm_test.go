package jvmlab

import (
	"context"
	"os"
	"testing"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
)

// TestScenario runs the quick profile when ward's JVM modules are built
// (WARD_JAVA_CLASSPATH; CI sets it and requires every case), and checks
// every benchmark is recorded with its iterations, the ratios, and the
// section; without them, that the scenario says what is missing.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs JMH")
	}
	env := lab.NewEnv("jvm", true, nil, nil)
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	rs := lab.Results(env.Results())
	if os.Getenv(peers.JavaEnv) == "" {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal("WARD_JAVA_CLASSPATH is not set in CI")
		}
		if r, ok := rs.Get("jmh", lab.MetricUnavailable); !ok || r.Note == "" {
			t.Fatalf("without the JVM modules: %+v", rs)
		}
		return
	}
	for _, r := range rs {
		if r.Metric == lab.MetricUnavailable {
			t.Fatalf("not run: %s: %s", r.Case, r.Note)
		}
		if r.Median <= 0 || r.P05 > r.Median || r.Median > r.P95 {
			t.Errorf("bad summary: %+v", r)
		}
	}
	for _, o := range fieldOps {
		for _, size := range Sizes {
			for _, impl := range []string{"ward-java", "jdk"} {
				if r, ok := rs.Get(fieldCase(impl, o.op, size), "time"); !ok || r.N != 3 || r.Source != lab.SourcePeer {
					t.Errorf("%s %s %d: %+v", impl, o.op, size, r)
				}
			}
			if _, ok := rs.Get(fieldRatio(o.op, size), "ratio"); !ok {
				t.Errorf("ratio %s %d missing", o.op, size)
			}
		}
	}
	for _, c := range passwordCases {
		if r, ok := rs.Get(passwordCase(c.bench), "hash_latency"); !ok || r.N != 3 {
			t.Errorf("%s: %+v", c.bench, r)
		}
	}
	if _, ok := rs.Get(passwordRatio, "ratio"); !ok {
		t.Error("the encoders' ratio is missing")
	}
	sec, err := Scenario{}.Report(rs)
	if err != nil || len(sec.Tables) != 2 || len(sec.Tables[0].Rows) != 6 || len(sec.Tables[1].Rows) != 4 || len(sec.Answer) != 2 || len(sec.Headlines) != 3 {
		t.Fatalf("section: %+v %v", sec, err)
	}
}
