package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/wardlab/ward/lab"
)

// Comparison is one case measured in two runs.
type Comparison struct {
	Scenario, Case, Metric, Unit string
	A, B                         float64 // medians
	Ratio                        float64 // B / A
}

// Compare matches the results of two runs by scenario, case and metric
// (measured values only, not quotes) and returns B/A per case, in A's
// order.
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
		out = append(out, Comparison{r.Scenario, r.Case, r.Metric, r.Unit, r.Median, o.Median, o.Median / r.Median})
	}
	return out
}

// WriteComparison prints a comparison as a table, with both manifests.
func WriteComparison(w io.Writer, ma, mb lab.Manifest, cs []Comparison) error {
	fmt.Fprintf(w, "A: %s, %d cores, %s, %s, %s profile\n", ma.CPUModel, ma.Cores, ma.GoVersion, ma.Date.Format("2006-01-02 15:04"), ma.Profile)
	fmt.Fprintf(w, "B: %s, %d cores, %s, %s, %s profile\n\n", mb.CPUModel, mb.Cores, mb.GoVersion, mb.Date.Format("2006-01-02 15:04"), mb.Profile)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCASE\tMETRIC\tA\tB\tB/A")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s %s\t%.3fx\n", c.Scenario, c.Case, c.Metric, fmtNum(c.A), c.Unit, fmtNum(c.B), c.Unit, c.Ratio)
	}
	return tw.Flush()
}
