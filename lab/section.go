package lab

import "html/template"

// Section is one scenario's part of the report: what it answers, with
// the figures that answer it.
type Section struct {
	// Title and Question come from the scenario.
	Title, Question string
	// Answer are sentences with this run's numbers.
	Answer []string
	// SameMachine are lines setting a field report's own stack, run on
	// this machine in this run, beside ward: "the report's stack here,
	// ward here, and the ratio".
	SameMachine []string
	// FieldReport quotes the field report's own figures, measured
	// elsewhere, on other hardware.
	FieldReport string
	// Charts are inline SVG (see package lab/chart).
	Charts []template.HTML
	Tables []Table
	// Headlines are the results 'ward bench' prints at the end.
	Headlines []Result
}

// Table is a table of the report (HTML and Markdown).
type Table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// GenericSection lists every result of a scenario the report has no
// builder for (for example from a newer build).
func GenericSection(name string, rs Results) Section {
	t := Table{Caption: "All results", Head: []string{"case", "metric", "median", "p05", "p95", "unit", "source"}}
	for _, r := range rs {
		src := r.Source
		if src == "" {
			src = "here"
		}
		t.Rows = append(t.Rows, []string{r.Case, r.Metric, FormatNumber(r.Median), FormatNumber(r.P05), FormatNumber(r.P95), r.Unit, src})
	}
	return Section{Title: "Scenario " + name, Question: "Results of the " + name + " scenario.", Tables: []Table{t}}
}
