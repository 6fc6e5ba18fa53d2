// Package report turns a lab results folder into a self-contained HTML
// report (charts as inline SVG drawn with gonum/plot, no scripts, no
// fetched assets) and a Markdown summary, and compares two runs.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wardlab/ward/lab"
)

// File names written into the results folder.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "summary.md"
)

// table is a table for both the HTML and the Markdown output.
type table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// section is one scenario's part of the report.
type section struct {
	ID, Title, Question string
	Answer              []string
	Seed                string
	Charts              []template.HTML
	Tables              []table
}

// builders make sections for the scenarios the report knows; others get
// a generic table.
var builders = map[string]func(ix index) (section, error){
	"aead":      aeadSection,
	"password":  passwordSection,
	"handshake": handshakeSection,
	"kms":       kmsSection,
	"tls":       tlsSection,
	"chat":      chatSection,
}

// order is the order of sections in the report.
var order = []string{"aead", "password", "kms", "handshake", "tls", "chat"}

// Write builds report.html and summary.md in dir from the results.
func Write(dir string, m lab.Manifest, rs []lab.Result) (htmlPath, mdPath string, err error) {
	secs, err := sections(rs)
	if err != nil {
		return "", "", err
	}
	var hb bytes.Buffer
	if err := page.Execute(&hb, struct {
		M        lab.Manifest
		Sections []section
		Flags    string
	}{m, secs, flagList(m)}); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	htmlPath = filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(htmlPath, hb.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	mdPath = filepath.Join(dir, MarkdownFile)
	if err := os.WriteFile(mdPath, markdown(m, secs), 0o644); err != nil {
		return "", "", fmt.Errorf("report: %w", err)
	}
	return htmlPath, mdPath, nil
}

// Rebuild reads a results folder and writes its report.
func Rebuild(dir string) (string, string, error) {
	m, rs, err := lab.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	return Write(dir, m, rs)
}

func sections(rs []lab.Result) ([]section, error) {
	by := map[string][]lab.Result{}
	for _, r := range rs {
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	names := sortedKeys(by)
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	var out []section
	for _, n := range names {
		b, ok := builders[n]
		if !ok {
			b = genericSection
		}
		s, err := b(index{scenario: n, rs: by[n]})
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", n, err)
		}
		if s.ID == "" {
			s.ID = n
		}
		out = append(out, s)
	}
	return out, nil
}

func rank(name string) int {
	for i, n := range order {
		if n == name {
			return i
		}
	}
	return len(order)
}

func flagList(m lab.Manifest) string {
	var on []string
	for _, f := range sortedKeys(m.CPUFlags) {
		if m.CPUFlags[f] {
			on = append(on, f)
		}
	}
	return strings.Join(on, " ")
}

// index looks results up by case and metric.
type index struct {
	scenario string
	rs       []lab.Result
}

func (ix index) get(cas, metric string) (lab.Result, bool) {
	for _, r := range ix.rs {
		if r.Case == cas && r.Metric == metric {
			return r, true
		}
	}
	return lab.Result{}, false
}

func (ix index) median(cas, metric string) float64 {
	r, ok := ix.get(cas, metric)
	if !ok {
		return math.NaN()
	}
	return r.Median
}

func (ix index) where(f func(lab.Result) bool) []lab.Result {
	var out []lab.Result
	for _, r := range ix.rs {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

// num reads a numeric parameter whether it came from memory (int) or JSON
// (float64).
func num(p map[string]any, k string) float64 {
	switch v := p[k].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return math.NaN()
}

func str(p map[string]any, k string) string {
	if v, ok := p[k]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

func genericSection(ix index) (section, error) {
	t := table{Caption: "All results", Head: []string{"case", "metric", "median", "p05", "p95", "unit", "source"}}
	for _, r := range ix.rs {
		src := r.Source
		if src == "" {
			src = "here"
		}
		t.Rows = append(t.Rows, []string{r.Case, r.Metric, fmtNum(r.Median), fmtNum(r.P05), fmtNum(r.P95), r.Unit, src})
	}
	return section{Title: "Scenario " + ix.scenario, Question: "Results of the " + ix.scenario + " scenario.", Tables: []table{t}}, nil
}

// markdown renders the summary with the same tables.
func markdown(m lab.Manifest, secs []section) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# ward lab report\n\nMachine: %s, %d cores, %s/%s, %s, flags: %s. Profile %s, %s, commit %s.\n\n",
		m.CPUModel, m.Cores, m.OS, m.Arch, m.GoVersion, flagList(m), m.Profile, m.Date.Format("2006-01-02 15:04 MST"), short(m.GitCommit))
	b.WriteString("Figures marked *seed* were measured elsewhere, on other hardware, and are quoted from the seed reports.\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "\n## %s\n\n**Question.** %s\n\n", s.Title, s.Question)
		for _, a := range s.Answer {
			fmt.Fprintf(&b, "- %s\n", a)
		}
		if s.Seed != "" {
			fmt.Fprintf(&b, "\n*Seed (measured elsewhere):* %s\n", s.Seed)
		}
		for _, t := range s.Tables {
			fmt.Fprintf(&b, "\n%s\n\n| %s |\n|%s\n", t.Caption, strings.Join(t.Head, " | "), strings.Repeat("---|", len(t.Head)))
			for _, r := range t.Rows {
				fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
			}
		}
	}
	return b.Bytes()
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
