package lab

import (
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSummary(t *testing.T) {
	n, med, lo, hi := Summary([]float64{5, 1, 4, 2, 3})
	if n != 5 || med != 3 || lo != 1 || hi != 5 {
		t.Fatal(n, med, lo, hi)
	}
	var s []float64
	for i := 1; i <= 100; i++ {
		s = append(s, float64(i))
	}
	if _, med, lo, hi := Summary(s); med != 51 || lo != 6 || hi != 95 {
		t.Fatal(med, lo, hi)
	}
	if n, _, _, _ := Summary(nil); n != 0 {
		t.Fatal(n)
	}
}

func TestWriteReadDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	m := NewManifest("quick", []string{"x"})
	rs := []Result{
		FromSamples("x", "c1", map[string]any{"size": 500}, "time", "ns/op", []float64{1, 2, 3}),
		Quote("x", "quoted", nil, "ratio", "x", 1.67, SourceFieldReport, "elsewhere, with \"quotes\", and commas"),
	}
	if err := WriteDir(dir, m, rs); err != nil {
		t.Fatal(err)
	}
	m2, rs2, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs2) != 2 || rs2[0].Median != 2 || rs2[1].Source != SourceFieldReport || m2.Cores != m.Cores || m2.CPUModel == "" {
		t.Fatalf("%+v %+v", m2, rs2)
	}
	f, _ := os.Open(filepath.Join(dir, ResultsCSV))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 || len(rows[0]) != len(csvHeader) || rows[1][2] != `{"size":500}` || rows[2][2] != `{}` {
		t.Fatalf("%v %v", rows, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestJSON)); err != nil {
		t.Fatal(err)
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	s, err := Measure(context.Background(), Sampling{Samples: 5, Target: time.Millisecond}, func(n int) error {
		calls += n
		time.Sleep(time.Duration(n) * 10 * time.Microsecond)
		return nil
	})
	if err != nil || len(s) != 5 {
		t.Fatal(s, err)
	}
	for _, v := range s {
		if v < 10e3 { // at least the 10 µs slept per op
			t.Fatalf("sample %v ns/op below the sleep", v)
		}
	}
	boom := errors.New("boom")
	if _, err := Measure(context.Background(), QuickSampling, func(int) error { return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, QuickSampling, func(int) error { return nil }); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

func TestEnvRecord(t *testing.T) {
	e := NewEnv("s", true, nil, nil)
	e.Record(Result{Case: "c"})
	if r := e.Results()[0]; r.Scenario != "s" || r.Params == nil || e.Sampling != QuickSampling {
		t.Fatalf("%+v", r)
	}
}

// TestRatios: a paired ratio keeps one sample per round; a cross ratio
// pairs every sample with every other, or a spread-out bounded subset;
// Uncertain flags a spread that reaches past 1.
func TestRatios(t *testing.T) {
	num, den := []float64{2, 4, 6}, []float64{1, 2, 3}
	if r := PairedRatio("s", "c", nil, "m", num, den, ""); r.N != 3 || r.Median != 2 || r.P05 != 2 || r.Unit != "x" || r.Uncertain() {
		t.Fatalf("paired: %+v", r)
	}
	if r := CrossRatio("s", "c", nil, "m", num, den, ""); r.N != 9 || r.Median != 2 || r.P05 != 2.0/3 || r.P95 != 6 || !r.Uncertain() {
		t.Fatalf("cross: %+v", r)
	}
	big := make([]float64, 100)
	for i := range big {
		big[i] = float64(i + 1)
	}
	r := CrossRatio("s", "c", nil, "m", big, big, "")
	if r.N < maxCrossPairs/2 || r.N > maxCrossPairs || r.Median < 0.8 || r.Median > 1.25 {
		t.Fatalf("bounded cross: %d samples, median %v", r.N, r.Median)
	}
	seen := map[float64]bool{}
	for _, v := range r.Samples {
		seen[v] = true
	}
	if len(seen) < 300 {
		t.Fatalf("the subset repeats itself: %d distinct ratios", len(seen))
	}
	if s := (Result{Unit: "x", N: 5, Median: 1.2, P05: 1.1, P95: 1.3}).Spread(); s != "1.10–1.30" {
		t.Fatal(s)
	}
}

// TestReadV1: folders of schema v1 read, with their field-report source
// renamed.
func TestReadV1(t *testing.T) {
	dir := t.TempDir()
	doc := `{"schema":"ward-lab/v1","manifest":{"schema":"ward-lab/v1","cores":2},"results":[{"scenario":"x","case":"q","metric":"ratio","unit":"x","n":1,"median":1.67,"p05":1.67,"p95":1.67,"source":"seed"}]}`
	if err := os.WriteFile(filepath.Join(dir, ResultsJSON), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	m, rs, err := ReadDir(dir)
	if err != nil || m.Cores != 2 || len(rs) != 1 || rs[0].Source != SourceFieldReport || rs[0].Samples != nil {
		t.Fatalf("%+v %+v %v", m, rs, err)
	}
	os.WriteFile(filepath.Join(dir, ResultsJSON), []byte(`{"schema":"ward-lab/v9"}`), 0o644)
	if _, _, err := ReadDir(dir); err == nil {
		t.Fatal("unknown schema read")
	}
}

// TestLoad: a run records the load before and after; the machine counts
// as busy when the load before exceeds the cores or time was stolen.
func TestLoad(t *testing.T) {
	before := ReadLoad()
	time.Sleep(20 * time.Millisecond)
	r := Run("x", before, ReadLoad())
	if r.Name != "x" || r.Seconds < 0.02 || r.StealPercent < 0 || r.StealPercent > 100 {
		t.Fatalf("%+v", r)
	}
	if (ScenarioRun{Load1Before: 0.5, Load1After: 3}).Busy(2) {
		t.Error("the scenario's own load counted as busy")
	}
	if !(ScenarioRun{Load1Before: 2.5}).Busy(2) || !(ScenarioRun{StealPercent: 9}).Busy(2) {
		t.Error("busy machine not flagged")
	}
	u := Unavailable("s", "peer", SourcePeer, errors.New("javac: not installed (apt-get install default-jdk-headless)"))
	if u.Metric != MetricUnavailable || u.N != 0 || u.Source != SourcePeer {
		t.Fatalf("%+v", u)
	}
	if Milliseconds(1500*time.Microsecond) != 1.5 {
		t.Fatal(Milliseconds(1500 * time.Microsecond))
	}
}

// TestInterleaveAlternates: rounds run the operations in alternating
// order (A B, then B A), so that none always runs first.
func TestInterleaveAlternates(t *testing.T) {
	var order []string
	op := func(name string) func(int) error {
		return func(n int) error {
			if n > 0 {
				order = append(order, name)
			}
			return nil
		}
	}
	if _, err := Interleave(context.Background(), Sampling{Samples: 3, Target: time.Microsecond}, op("a"), op("b")); err != nil {
		t.Fatal(err)
	}
	rounds := order[len(order)-6:] // after calibration
	if got := strings.Join(rounds, ""); got != "abbaab" {
		t.Fatalf("order %q, want abbaab", got)
	}
}

// TestThreadCPUClock: with ThreadCPU a batch that sleeps costs the thread
// less CPU time than it waits, and one that computes costs some; a wall
// clock counts the wait.
func TestThreadCPUClock(t *testing.T) {
	if _, ok := threadCPU(); !ok {
		t.Skip("no thread CPU clock here")
	}
	const nap = 20 * time.Millisecond
	sleep := func(n int) error { time.Sleep(time.Duration(n) * nap); return nil }
	sink := 0
	spin := func(n int) error {
		for i := range n * 100000 {
			sink += i
		}
		return nil
	}
	s := Sampling{Samples: 3, Target: nap, Clock: ThreadCPU}
	rounds, err := Interleave(context.Background(), s, sleep, spin)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range rounds[0] {
		if ns >= float64(nap) {
			t.Fatalf("a sleeping batch cost %v of thread CPU per sleep of %v", time.Duration(ns), nap)
		}
	}
	if slices.Max(rounds[1]) <= 0 {
		t.Fatalf("a computing batch cost no CPU: %v", rounds[1])
	}
	s.Clock = Wall
	wall, err := Measure(context.Background(), s, sleep)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Min(wall) < float64(nap) {
		t.Fatalf("wall time of a %v sleep: %v", nap, wall)
	}
	_ = sink
}

// TestProcessCPUClock: work a batch hands to another goroutine costs the
// measuring thread almost nothing, and the process what the work costs:
// the clock for x/crypto's Argon2, which hashes on goroutines of its own.
func TestProcessCPUClock(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("no process CPU clock here")
	}
	var sink atomic.Int64
	elsewhere := func(n int) error {
		done := make(chan struct{})
		go func() {
			for i := range n * 200000 {
				sink.Add(int64(i))
			}
			close(done)
		}()
		<-done
		return nil
	}
	s := Sampling{Samples: 5, Target: 5 * time.Millisecond, Clock: ThreadCPU}
	thread, err := Measure(context.Background(), s, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	s.Clock = ProcessCPU
	process, err := Measure(context.Background(), s, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	_, tm, _, _ := Summary(thread)
	_, pm, _, _ := Summary(process)
	if pm <= 2*tm {
		t.Fatalf("work on another goroutine: %.0f ns of process CPU per op, %.0f of the waiting thread's", pm, tm)
	}
}

// TestNum: a parameter reads the same from memory, whatever integer type
// the scenario recorded, and from JSON. (The first screen printed a
// password parameter recorded as uint32 as -9223372036854775808.)
func TestNum(t *testing.T) {
	p := map[string]any{"a": 3, "b": int64(3), "c": int32(3), "d": uint8(3), "e": uint32(3), "f": uint64(3), "g": 3.0}
	for k := range p {
		if v := Num(p, k); v != 3 {
			t.Errorf("%s (%T): %v", k, p[k], v)
		}
	}
	if v := Num(p, "none"); !math.IsNaN(v) {
		t.Errorf("absent: %v", v)
	}
}

// TestAddedText: an amount added over what a layer wraps is printed only
// when its spread stays above 0.
func TestAddedText(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{N: 11, Median: 53.9, P05: 45, P95: 70.8}, "53.9 ns (45.0 to 70.8)"},
		{Result{N: 11, Median: 5852, P05: -8628, P95: 24498}, "within noise (-8,628 to 24,498 ns)"},
		{Result{N: 11, Median: -35644, P05: -116338, P95: -18921}, "within noise (-116,338 to -18,921 ns)"},
		{Result{}, "–"},
	} {
		if got := tc.r.AddedText("ns"); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
