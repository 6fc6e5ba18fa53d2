package lab

import (
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
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
		Quote("x", "seed", nil, "ratio", "x", 1.67, "seed", "elsewhere, with \"quotes\", and commas"),
	}
	if err := WriteDir(dir, m, rs); err != nil {
		t.Fatal(err)
	}
	m2, rs2, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs2) != 2 || rs2[0].Median != 2 || rs2[1].Source != "seed" || m2.Cores != m.Cores || m2.CPUModel == "" {
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
