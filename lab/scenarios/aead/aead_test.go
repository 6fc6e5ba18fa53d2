package aeadlab

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
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
	missing := map[string]bool{} // peers that did not run here, by case
	for _, r := range env.Results() {
		count[r.Metric+"/"+r.Source]++
		if r.Metric == "unavailable" {
			missing[r.Case] = true
			continue
		}
		if r.Scenario != "aead" || r.N < 1 || !(r.Median > -100 || r.Metric == "added_ns" || r.Metric == "rest_ns") { // a difference of two noisy times may be below 0
			t.Fatalf("bad result %+v", r)
		}
		if r.Metric == "time" && (r.Median <= 0 || r.P05 > r.Median || r.Median > r.P95) {
			t.Fatalf("bad summary %+v", r)
		}
	}
	cases := 3 * len(Sizes) * 2    // algorithms x sizes x ops
	fips := 2 * len(fipsSizes) * 2 // AES-GCM x sizes x ops, in the FIPS 140-3 mode's child
	want := map[string]int{
		"time/":                   cases*4 + cases + fips*2, // raw, v4, v3 and tink-go with AES on, raw with AES off, raw and v4 in the FIPS mode
		"throughput/":             cases*5 + fips*2,
		"hw_speedup/":             cases,
		"field_overhead/":         cases*2 + fips,
		"added_ns/":               cases * 2,
		"added_ns/reference":      cases, // tink-go over raw
		"ratio/reference":         cases, // ward over tink-go
		"hw_speedup/field-report": 2,
	}
	jvm, python := !missing["java-aes-gcm"], !missing[implPython]
	if !python && os.Getenv("WARD_CI") != "" {
		t.Fatalf("the Python package's peer did not run in CI (%s is set by .ci/run)", peers.PythonEnv)
	}
	if python {
		want["time/"] += 8 * len(pythonSizes) // the package's seal and open, Python's raw AES-GCM two ways, the seal's parts
		want["field_overhead/"] += 4 * len(pythonSizes)
		want["rest_ns/"] = len(pythonSizes)
		want["without_check/"] = len(pythonSizes)
		want["time_ratio/"] = 2 * len(pythonSizes)
	}
	javaField := !missing[implJava]
	if !javaField && os.Getenv("WARD_CI") != "" {
		t.Fatalf("ward's JVM core did not run in CI (%s is set by .ci/run)", peers.JavaEnv)
	}
	if javaField {
		want["time/"] += 4 * len(javaSizes) // ward-java's seal and open, and the JDK's raw AES-GCM
		want["field_overhead/"] += 2 * len(javaSizes)
		want["time_ratio/"] += 2 * 3 // the sizes Go measures too: 64 B, 500 B, 4 KiB
	}
	delete(count, "unavailable/peer")
	if jvm {
		want["throughput/peer"] = len(jvmModes) * len(Sizes)
		want["hw_speedup/peer"] = (len(jvmModes) - 1) * len(Sizes)
		want["throughput_ratio/"] = len(Sizes)
	} else {
		t.Log("the JVM peer did not run here")
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
	for _, r := range env.Results() {
		if r.Metric == "time" && (len(r.Samples) != r.N || r.N < 3) {
			t.Fatalf("%s: %d samples kept of %d", r.Case, len(r.Samples), r.N)
		}
		if r.Metric == "hw_speedup" && r.Source == "" && len(r.Samples) < 3*lab.QuickSampling.Samples {
			t.Fatalf("%s: %d cross ratios, want at least 3 x %d", r.Case, len(r.Samples), lab.QuickSampling.Samples)
		}
	}
	sec, err := Scenario{}.Report(env.Results())
	headlines, same, tables, answers := 3, 0, 4, 4 // with tink-go's table and answer
	if jvm {
		headlines, same = 4, len(Sizes)
	}
	if python {
		tables, answers = 6, 5 // with the seal's parts
	}
	if javaField {
		tables++
	}
	if err != nil || len(sec.Charts) != 1 || len(sec.Tables) != tables || len(sec.Headlines) != headlines || len(sec.Answer) != answers ||
		len(sec.SameMachine) != same || sec.FieldReport == "" {
		t.Fatalf("section %+v %v", sec, err)
	}
}
