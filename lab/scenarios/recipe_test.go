package scenarios_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/report"
	"github.com/wardlab/ward/lab/scenarios"
)

// CONTRIBUTING.md's recipe for a scenario, followed once: a throwaway
// scenario that measures SHA-256 at two sizes. In the repository it would
// be a package lab/scenarios/hashing and one line in All.
type hashing struct{}

// Step 1: name, title and question.
func (hashing) Name() string     { return "hashing" }
func (hashing) Title() string    { return "Hashing: what SHA-256 costs" }
func (hashing) Question() string { return "How fast is SHA-256 at 64 B and 4 KiB?" }

// Step 2: a typed case key, shared by Run and Report.
type hashKey struct{ size int }

func (k hashKey) name() string { return fmt.Sprintf("sha256/%dB", k.size) }

var sizes = []int{64, 4096}

// Step 3: Run measures, interleaved, and records samples and ratios.
func (hashing) Run(ctx context.Context, env *lab.Env) error {
	var ops []func(int) error
	for _, size := range sizes {
		buf := make([]byte, size)
		ops = append(ops, func(n int) error {
			for range n {
				sha256.Sum256(buf)
			}
			return nil
		})
	}
	rounds, err := lab.Interleave(ctx, env.Sampling, ops...)
	if err != nil {
		return err
	}
	for i, size := range sizes {
		env.Record(lab.FromSamples("", hashKey{size}.name(), map[string]any{"size": size}, "time", "ns/op", rounds[i]))
	}
	env.Record(lab.PairedRatio("", "4KiB-vs-64B", nil, "ratio", rounds[1], rounds[0], "per round"))
	return nil
}

// Step 4: Report builds the section from the results.
func (s hashing) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	t := lab.Table{Caption: "ns per hash", Head: []string{"size", "median", "p05–p95"}}
	for _, size := range sizes {
		r, _ := rs.Get(hashKey{size}.name(), "time")
		t.Rows = append(t.Rows, []string{fmt.Sprint(size), lab.FormatNumber(r.Median), r.Spread()})
	}
	sec.Tables = append(sec.Tables, t)
	if r, ok := rs.Get("4KiB-vs-64B", "ratio"); ok {
		sec.Answer = append(sec.Answer, "4 KiB takes "+lab.FormatNumber(r.Median)+"x the time of 64 B.")
		sec.Headlines = append(sec.Headlines, r)
	}
	return sec, nil
}

// TestScenarioRecipe runs the throwaway scenario as 'ward bench' would
// and renders the report with it registered (step 5: one line in All).
func TestScenarioRecipe(t *testing.T) {
	all := append(scenarios.All(), hashing{}) // step 5
	env := lab.NewEnv("hashing", true, nil, nil)
	env.Sampling = lab.Sampling{Samples: 5, Target: time.Millisecond}
	if err := (hashing{}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	m := lab.NewManifest("quick", []string{"hashing"})
	dir := t.TempDir()
	if err := lab.WriteDir(dir, m, env.Results()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := report.Rebuild(dir, all); err != nil {
		t.Fatal(err)
	}
	r, err := report.New(m, env.Results(), all)
	if err != nil {
		t.Fatal(err)
	}
	heads := r.Headlines()
	if len(heads) != 1 || heads[0].Scenario != "hashing" || heads[0].Median <= 1 {
		t.Fatalf("headlines %+v", heads)
	}
}

// TestRegistry: names are unique and every scenario says what it answers.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenarios.All() {
		if seen[s.Name()] || s.Title() == "" || s.Question() == "" {
			t.Fatalf("scenario %q: duplicate or undescribed", s.Name())
		}
		seen[s.Name()] = true
		if sec, err := s.Report(nil); err != nil || sec.Title != s.Title() {
			t.Fatalf("%s: empty results: %v", s.Name(), err)
		}
	}
}
