// Package report turns a lab results folder into a self-contained HTML
// report (every scenario's section, charts as inline SVG, no scripts, no
// fetched assets) and a Markdown summary, and compares two runs with a
// significance test.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/wardlab/ward/lab"
)

// File names written into the results folder.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "summary.md"
)

// section is a scenario's section with what the report adds: an anchor,
// the ratios whose spread is wider than their claim, and whether the
// machine was busy.
type section struct {
	lab.Section
	ID        string
	Uncertain []noisy
	Busy      string
	// Missing lists the peers and references that could not run here,
	// with what installs them.
	Missing []string
}

// sections builds each scenario's section from its results, in the order
// of scenarios; results of scenarios not among them get a generic section.
func sections(m lab.Manifest, rs []lab.Result, scenarios []lab.Scenario) ([]section, error) {
	by := map[string]lab.Results{}
	var names []string
	for _, r := range rs {
		if by[r.Scenario] == nil {
			names = append(names, r.Scenario)
		}
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	rank := func(n string) int {
		i := slices.IndexFunc(scenarios, func(s lab.Scenario) bool { return s.Name() == n })
		if i < 0 {
			return len(scenarios)
		}
		return i
	}
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	var out []section
	for _, n := range names {
		s := lab.GenericSection(n, by[n])
		if i := rank(n); i < len(scenarios) {
			var err error
			if s, err = scenarios[i].Report(by[n]); err != nil {
				return nil, fmt.Errorf("report: %s: %w", n, err)
			}
		}
		out = append(out, section{Section: s, ID: n, Uncertain: uncertain(by[n]), Busy: busy(m, n), Missing: missing(by[n])})
	}
	return out, nil
}

// withinNoise explains the list of uncertain ratios.
const withinNoise = "ratios whose p05–p95 reaches past 1, so that this run cannot tell them from no difference"

// noisy is one ratio whose spread reaches past 1, as the report's compact
// table shows it: its name and its p05–p95, never its median (a number
// inside the noise read as a finding, such as 0.8x for a layer over what
// it wraps).
type noisy struct{ Case, Spread string }

func (n noisy) String() string { return fmt.Sprintf("%s within noise (%s)", n.Case, n.Spread) }

// uncertain lists the ratios whose p05–p95 spread reaches past 1.
func uncertain(rs lab.Results) []noisy {
	var out []noisy
	for _, r := range rs {
		if r.Source == "" && r.Uncertain() {
			out = append(out, noisy{r.Case, r.Spread()})
		}
	}
	return out
}

// glanceScenarios are the four field reports' questions, in the order the
// first screen answers them.
var glanceScenarios = []string{"aead", "password", "kms", "handshake"}

// missing lists what could not run here, the command that brings it
// first when the note names one.
func missing(rs lab.Results) []string {
	var out []string
	for _, r := range rs.Where(func(r lab.Result) bool { return r.Metric == lab.MetricUnavailable }) {
		if strings.HasPrefix(r.Note, "apt-get ") {
			out = append(out, r.Note+" — for "+r.Case)
			continue
		}
		out = append(out, r.Case+": "+r.Note)
	}
	return out
}

// busy says how busy the machine was while the scenario ran, if it was.
func busy(m lab.Manifest, name string) string {
	for _, r := range m.Runs {
		if r.Name == name && r.Busy(m.Cores) {
			return fmt.Sprintf("The machine was busy during this scenario (load average %.2f before, %.2f after, %.1f%% of CPU time stolen on %d cores): treat its figures with care.",
				r.Load1Before, r.Load1After, r.StealPercent, m.Cores)
		}
	}
	return ""
}

// Report is the report of a set of results: every scenario's section,
// built once (charts included), then written and summarised.
type Report struct {
	m    lab.Manifest
	secs []section
	by   map[string]lab.Results
}

// New builds the sections of the results, in the order of scenarios.
func New(m lab.Manifest, rs []lab.Result, scenarios []lab.Scenario) (*Report, error) {
	secs, err := sections(m, rs, scenarios)
	if err != nil {
		return nil, err
	}
	by := map[string]lab.Results{}
	for _, r := range rs {
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	return &Report{m: m, secs: secs, by: by}, nil
}

// Write writes report.html and summary.md into dir.
func (r *Report) Write(dir string) (htmlPath, mdPath string, err error) {
	var hb bytes.Buffer
	if err := page.Execute(&hb, struct {
		M           lab.Manifest
		Glance      []glance
		Sections    []section
		Flags       string
		WithinNoise string
		Busy        string
	}{r.m, firstScreen(r.m, r.by, r.secs), r.secs, flagList(r.m), withinNoise, busyScenarios(r.m)}); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	htmlPath = filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(htmlPath, hb.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	mdPath = filepath.Join(dir, MarkdownFile)
	if err := os.WriteFile(mdPath, markdown(r.m, firstScreen(r.m, r.by, r.secs), r.secs), 0o644); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	return htmlPath, mdPath, nil
}

// Headlines returns every section's headline results, in order.
func (r *Report) Headlines() []lab.Result {
	var out []lab.Result
	for _, s := range r.secs {
		out = append(out, s.Headlines...)
	}
	return out
}

// Rebuild reads a results folder and writes its report.
func Rebuild(dir string, scenarios []lab.Scenario) (string, string, error) {
	m, rs, err := lab.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	r, err := New(m, rs, scenarios)
	if err != nil {
		return "", "", err
	}
	return r.Write(dir)
}

func flagList(m lab.Manifest) string {
	var on []string
	for f, ok := range m.CPUFlags {
		if ok {
			on = append(on, f)
		}
	}
	sort.Strings(on)
	return strings.Join(on, " ")
}

// markdown renders the summary with the same tables.
func markdown(m lab.Manifest, glances []glance, secs []section) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# ward lab report\n\nMachine: %s, %d cores, %s/%s, %s, flags: %s. Profile %s, %s, commit %s.\n\n",
		m.CPUModel, m.Cores, m.OS, m.Arch, m.GoVersion, flagList(m), m.Profile, m.Date.Format("2006-01-02 15:04 MST"), short(m.GitCommit))
	b.WriteString("Figures marked *field report* were measured elsewhere, on other hardware, and are quoted from the field reports (FIELD-REPORTS.md); *same machine* lines ran a report's own stack here, in this run.\n")
	for _, g := range glances {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", g.Title, g.Lead)
		if g.Busy != "" {
			fmt.Fprintf(&b, "\n**Note.** %s\n", g.Busy)
		}
		writeTable(&b, g.Table)
		for _, u := range g.Missing {
			fmt.Fprintf(&b, "\n*Not run here:* %s\n", u)
		}
	}
	for _, s := range secs {
		fmt.Fprintf(&b, "\n## %s\n\n**Question.** %s\n\n", s.Title, s.Question)
		for _, a := range s.Answer {
			fmt.Fprintf(&b, "- %s\n", a)
		}
		for _, a := range s.SameMachine {
			fmt.Fprintf(&b, "- *Same machine, same run:* %s\n", a)
		}
		if s.FieldReport != "" {
			fmt.Fprintf(&b, "\n*Field report (measured elsewhere):* %s\n", s.FieldReport)
		}
		if s.Busy != "" {
			fmt.Fprintf(&b, "\n**Note.** %s\n", s.Busy)
		}
		for _, u := range s.Missing {
			fmt.Fprintf(&b, "\n*Not run here:* %s\n", u)
		}
		if len(s.Uncertain) > 0 {
			fmt.Fprintf(&b, "\n*Within noise* (%s):\n\n| ratio | p05–p95 |\n|---|---|\n", withinNoise)
			for _, n := range s.Uncertain {
				fmt.Fprintf(&b, "| %s | %s |\n", n.Case, n.Spread)
			}
		}
		for _, t := range s.Tables {
			writeTable(&b, t)
		}
	}
	return b.Bytes()
}

// writeTable writes t as a Markdown table.
func writeTable(b *bytes.Buffer, t lab.Table) {
	fmt.Fprintf(b, "\n%s\n\n| %s |\n|%s\n", t.Caption, strings.Join(t.Head, " | "), strings.Repeat("---|", len(t.Head)))
	for _, r := range t.Rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r, " | "))
	}
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("report").Parse(pageHTML))
