package report

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"golang.org/x/perf/benchmath"

	"github.com/wardlab/ward/lab"
)

// Comparison is one case measured in two runs.
type Comparison struct {
	Scenario, Case, Metric, Unit string
	A, B                         float64 // medians
	Ratio                        float64 // B / A
	// P is the p-value of a Mann-Whitney U test on the two runs'
	// per-round samples (benchstat's test; -1 when either run has fewer
	// than two samples, as results of schema v1 do). Significant is P
	// below 0.05: the difference is unlikely to be noise.
	P           float64
	Significant bool
}

// Verdict says in words what the test concluded.
func (c Comparison) Verdict() string {
	switch {
	case c.P < 0:
		return "no samples: cannot tell"
	case c.Significant:
		return fmt.Sprintf("significant (p=%.3f)", c.P)
	}
	return fmt.Sprintf("~ not significant (p=%.3f)", c.P)
}

// Compare matches the results of two runs by scenario, case and metric
// (measured values only, not quotes) and returns B/A per case, in A's
// order, with a significance test where both have samples.
func Compare(a, b []lab.Result) []Comparison {
	key := func(r lab.Result) string { return r.Scenario + "\x00" + r.Case + "\x00" + r.Metric }
	bm := map[string]lab.Result{}
	for _, r := range b {
		if r.Source == "" {
			bm[key(r)] = r
		}
	}
	var out []Comparison
	for _, r := range a {
		if r.Source != "" {
			continue
		}
		o, ok := bm[key(r)]
		if !ok || r.Median == 0 {
			continue
		}
		c := Comparison{Scenario: r.Scenario, Case: r.Case, Metric: r.Metric, Unit: r.Unit, A: r.Median, B: o.Median, Ratio: o.Median / r.Median, P: -1}
		if len(r.Samples) >= 2 && len(o.Samples) >= 2 {
			sa := benchmath.NewSample(slices.Clone(r.Samples), &benchmath.DefaultThresholds)
			sb := benchmath.NewSample(slices.Clone(o.Samples), &benchmath.DefaultThresholds)
			cmp := benchmath.AssumeNothing.Compare(sa, sb)
			c.P, c.Significant = cmp.P, cmp.P < cmp.Alpha
		}
		out = append(out, c)
	}
	return out
}

// WriteComparison prints a comparison as a table, with both manifests.
func WriteComparison(w io.Writer, ma, mb lab.Manifest, cs []Comparison) error {
	fmt.Fprintf(w, "A: %s, %d cores, %s, %s, %s profile\n", ma.CPUModel, ma.Cores, ma.GoVersion, ma.Date.Format("2006-01-02 15:04"), ma.Profile)
	fmt.Fprintf(w, "B: %s, %d cores, %s, %s, %s profile\n\n", mb.CPUModel, mb.Cores, mb.GoVersion, mb.Date.Format("2006-01-02 15:04"), mb.Profile)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCASE\tMETRIC\tA\tB\tB/A\tVERDICT")
	sig := 0
	for _, c := range cs {
		if c.Significant {
			sig++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s %s\t%.3fx\t%s\n", c.Scenario, c.Case, c.Metric, lab.FormatNumber(c.A), c.Unit,
			lab.FormatNumber(c.B), c.Unit, c.Ratio, c.Verdict())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d of %d differences are significant at α=0.05 (Mann-Whitney U on per-round samples, as benchstat).\n", sig, len(cs))
	return err
}
