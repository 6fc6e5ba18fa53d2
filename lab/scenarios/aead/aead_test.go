package aeadlab

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
)

func TestMain(m *testing.M) {
	if served, err := lab.ServeChild(context.Background(), []lab.Scenario{Scenario{}}, nil); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestScenario runs the scenario end to end (with a child process for
// hardware AES off) and checks every case and derived ratio is reported.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the lab scenario")
	}
	env := lab.NewEnv("aead", true, nil, nil)
	env.Sampling = lab.Sampling{Samples: 3, Target: 2 * time.Millisecond}
	if err := (Scenario{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range env.Results() {
		count[r.Metric+"/"+r.Source]++
		if r.Scenario != "aead" || r.N < 1 || !(r.Median > -100) {
			t.Fatalf("bad result %+v", r)
		}
		if r.Metric == "time" && (r.Median <= 0 || r.P05 > r.Median || r.Median > r.P95) {
			t.Fatalf("bad summary %+v", r)
		}
	}
	cases := 3 * len(Sizes) * 2 // algorithms x sizes x ops
	want := map[string]int{
		"time/":           cases*2 + cases, // raw and field with AES on, raw with AES off
		"throughput/":     cases * 3,
		"hw_speedup/":     cases,
		"field_overhead/": cases,
		"hw_speedup/seed": 2,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s: %d results, want %d (all: %v)", k, count[k], n, count)
		}
	}
	var off int
	for _, r := range env.Results() {
		if r.Params["aes_hw"] == "off" {
			off++
		}
	}
	if off != cases*2 {
		t.Fatalf("%d results from the AES-off child, want %d", off, cases*2)
	}
}
