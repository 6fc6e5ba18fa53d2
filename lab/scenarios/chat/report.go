package chatlab

import (
	"fmt"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
)

// Report builds the section: latency and throughput with encryption off
// and on, and the per-request cost with its spread.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	t := lab.Table{Caption: "Median request latency and requests per second, encryption off vs on (same service, SQLite, alternating requests); the cost is the process's CPU time per request, on over off",
		Head: []string{"request", "plaintext ms", "encrypted ms", "plaintext req/s", "encrypted req/s", "CPU cost (p05–p95)"}}
	vals := map[string][]float64{}
	var labels []string
	for _, op := range []string{SendMessage, LoadConversation} {
		off, on := caseKey{op, Plaintext}.name(), caseKey{op, Encrypted}.name()
		cost, ok := rs.Get(costCase(op), "encryption_cost")
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, []string{op, lab.FormatNumber(rs.Median(off, "request_latency")), lab.FormatNumber(rs.Median(on, "request_latency")),
			lab.FormatNumber(rs.Median(off, "requests_per_second")), lab.FormatNumber(rs.Median(on, "requests_per_second")), percent(cost)})
		labels = append(labels, op)
		vals[Plaintext] = append(vals[Plaintext], rs.Median(off, "request_latency"))
		vals[Encrypted] = append(vals[Encrypted], rs.Median(on, "request_latency"))
		sec.Answer = append(sec.Answer, fmt.Sprintf("%s: encryption's cost in CPU time per request: %s (%s ms vs %s ms median latency).", op, percent(cost),
			lab.FormatNumber(rs.Median(on, "request_latency")), lab.FormatNumber(rs.Median(off, "request_latency"))))
		sec.Headlines = append(sec.Headlines, cost)
	}
	if len(labels) == 0 {
		return sec, nil
	}
	sec.Tables = append(sec.Tables, t)
	c, err := chart.Bars("Median request latency", "ms", labels, modes[:], vals)
	if err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, c)
	sec.FieldReport = "The chat field report measured AES-GCM alone in the JVM, not its service; the service-level cost here includes HTTP, SQLite, JSON and the stand-in assistant."
	return sec, nil
}

// percent prints a ratio as a cost with its spread: "+4 % (p05–p95 +1 % to
// +12 %)" — or, when the spread reaches 0 or the median is below it (the
// encrypted service does everything the plaintext one does, and more),
// "within noise (p05–p95 -3 % to +12 %)": a difference the machine's noise
// could make is never printed as a finding (docs/LAB.md).
func percent(r lab.Result) string {
	p := func(v float64) string { return fmt.Sprintf("%+.0f %%", (v-1)*100) }
	spread := fmt.Sprintf("p05–p95 %s to %s", p(r.P05), p(r.P95))
	if r.Uncertain() || r.Median < 1 {
		return "within noise (" + spread + ")"
	}
	return fmt.Sprintf("%s (%s)", p(r.Median), spread)
}
