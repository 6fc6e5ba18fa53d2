package passwordlab

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
	"github.com/wardlab/ward/password"
)

func TestMain(m *testing.M) {
	if served, err := lab.ServeChild(context.Background(), []lab.Scenario{Scenario{}}, os.Args[1:]); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestScenario runs the quick profile and checks every case is reported
// with sane values and per-round samples, the report's figures are
// labelled as quotes, and the section builds.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real password hashes")
	}
	env := lab.NewEnv("password", true, nil, nil)
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	rs := lab.Results(env.Results())
	for _, r := range rs {
		if r.Metric == lab.MetricUnavailable {
			t.Logf("not run: %s: %s", r.Case, r.Note)
			continue
		}
		if r.Median <= 0 || r.P05 > r.Median || r.Median > r.P95 {
			t.Errorf("bad summary: %+v", r)
		}
	}
	for _, c := range argon2Cases {
		for _, impl := range []string{"ward", "x-crypto"} {
			if r, ok := rs.Get(implKey{c, impl}.name(), "hash_latency"); !ok || r.N != 11 || len(r.Samples) != 11 {
				t.Errorf("%s/%s: %+v", c.name, impl, r)
			}
			// The CPU time the ratios come from: every round, each hash
			// some CPU (x/crypto's on goroutines of its own, which a
			// thread's clock would have missed).
			if r, ok := rs.Get(implKey{c, impl}.name(), "hash_cpu"); !ok || r.N != 11 || slices.Min(r.Samples) <= 0 {
				t.Errorf("%s/%s CPU: %+v", c.name, impl, r)
			}
		}
		if r, ok := rs.Get(vsKey(c, "x-crypto"), "ratio"); !ok || r.N != 11 {
			t.Errorf("ratio %s: %+v", c.name, r)
		}
		for _, ref := range []string{"c-reference", "rust-argon2", "libsodium"} { // in CI every peer runs
			if r, ok := rs.Get(vsKey(c, ref), "ratio"); c.params.Parallelism == 1 && os.Getenv("WARD_CI") != "" && (!ok || r.N != 11) {
				t.Errorf("ratio %s to %s: %+v", c.name, ref, r)
			}
		}
		ward, x := rs.Median(implKey{c, "ward"}.name(), "peak_rss"), rs.Median(implKey{c, "x-crypto"}.name(), "peak_rss")
		if !(ward > float64(c.params.Memory)/1024) || !(x > float64(c.params.Memory)/1024) {
			t.Errorf("peak RSS %s: ward %v, x/crypto %v", c.name, ward, x)
		}
	}
	for _, n := range Bursts {
		for _, mode := range []string{"unlimited", "limiter"} {
			for _, m := range []string{"burst_time", "request_latency", "burst_vs_ideal"} {
				if _, ok := rs.Get(burstKey{n, mode}.name(), m); !ok {
					t.Errorf("missing burst %d/%s %s", n, mode, m)
				}
			}
		}
	}
	if r, _ := rs.Get("field-report/spring-argon2-v5.8", "hash_latency"); r.Source != lab.SourceFieldReport || r.Median != 450 {
		t.Errorf("field report quote: %+v", r)
	}
	tables := 3
	if os.Getenv(peers.JavaEnv) != "" { // CI sets it: the report's own stack runs
		checkSpringStack(t, rs)
		tables++
	}
	sec, err := Scenario{}.Report(rs)
	if err != nil || len(sec.Tables) != tables || len(sec.Charts) != 1 || len(sec.Headlines) < 2 {
		t.Fatalf("section: %+v %v", sec, err)
	}
}

// checkSpringStack checks the JVM cases of a quick run: one JVM, 4
// interleaved rounds, one burst each, and the two ratios.
func checkSpringStack(t *testing.T, rs lab.Results) {
	t.Helper()
	for _, c := range []string{springEncode, springMatches, wardJavaSame, wardJavaOWASP, wardJavaLogin} {
		if r, ok := rs.Get(c, "hash_latency"); !ok || r.N != 4 || r.Source != lab.SourcePeer {
			t.Errorf("%s: %+v", c, r)
		}
	}
	for _, c := range []string{springBurst, wardJavaBurst} {
		if r, ok := rs.Get(c, "burst_time"); !ok || r.N != 1 {
			t.Errorf("%s: %+v", c, r)
		}
	}
	if r, ok := rs.Get(wardJavaVsSpring, "ratio"); !ok || r.N != 4 || r.Median <= 0 {
		t.Errorf("ward-java over Spring: %+v", r)
	}
	if r, ok := rs.Get(wardJavaVsGo, "ratio"); !ok || r.N == 0 {
		t.Errorf("ward-java over Go: %+v", r)
	}
	ow, _ := rs.Get(wardJavaOWASP, "hash_latency")
	if lab.Str(ow.Params, "params") != password.OWASP().String() {
		t.Errorf("ward-java's preset: %+v", ow.Params)
	}
}
