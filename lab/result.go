// Package lab runs ward's experiments and records their results.
//
// Every scenario (aead, password, kms, handshake, tls, chat, …) reports
// [Result] rows in one schema and builds its own report [Section] from
// them, so that one writer, one report and one comparison tool serve them
// all. A results folder holds results.csv, results.json and manifest.json
// (the machine the numbers came from, and how busy it was). The registry
// of scenarios is package lab/scenarios; package lab/report renders the
// sections; lab/chart draws their charts.
package lab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Schema names the result format written: v2 keeps every result's
// per-round samples. v1 (without samples) is still read.
const (
	Schema   = "ward-lab/v2"
	SchemaV1 = "ward-lab/v1"
)

// Result is one measured (or quoted) quantity.
type Result struct {
	// Scenario is the scenario name, such as "aead".
	Scenario string `json:"scenario"`
	// Case names what was measured within the scenario, unique together
	// with Metric, such as "AES-256-GCM/seal/500B/raw/aes-hw-on".
	Case string `json:"case"`
	// Params holds the case's parameters as a flat object.
	Params map[string]any `json:"params"`
	// Metric is what the numbers are: "time", "throughput", "ratio", …
	Metric string `json:"metric"`
	// Unit is the unit of Median, P05 and P95: "ns/op", "MB/s", "x", "%", …
	Unit string `json:"unit"`
	// N is the number of samples summarised.
	N int `json:"n"`
	// Median, P05 and P95 summarise the samples.
	Median float64 `json:"median"`
	P05    float64 `json:"p05"`
	P95    float64 `json:"p95"`
	// Samples are the per-round values (v2): one per timed batch, run or
	// round; for a ratio, the per-round ratios of interleaved rounds.
	Samples []float64 `json:"samples,omitempty"`
	// Source is empty for a value measured in this run, "field-report"
	// for a figure quoted from a field report (measured elsewhere, on other
	// hardware), "reference" for another tool measured here, or "peer"
	// for a field report's own stack run here.
	Source string `json:"source,omitempty"`
	// Note explains how a value was derived or where it was quoted from.
	Note string `json:"note,omitempty"`
}

// MetricUnavailable is the metric of a result that says a peer or
// reference could not run on this machine: its Note says why and what
// installs it. The report lists these; it never shows them as zero.
const MetricUnavailable = "unavailable"

// Unavailable records that cas (a peer or reference) could not run here;
// err says why and, for a [peers.MissingError]-like error, what brings it.
func Unavailable(scenario, cas, source string, err error) Result {
	return Result{Scenario: scenario, Case: cas, Metric: MetricUnavailable, Source: source, Note: err.Error()}
}

// Sources of a Result.
const (
	SourceFieldReport = "field-report"
	SourceReference   = "reference"
	SourcePeer        = "peer"
)

// Summary returns a Result's statistics for samples: median, 5th and 95th
// percentile (nearest rank on the sorted samples).
func Summary(samples []float64) (n int, median, p05, p95 float64) {
	if len(samples) == 0 {
		return 0, 0, 0, 0
	}
	s := slices.Clone(samples)
	sort.Float64s(s)
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return s[i]
	}
	return len(s), q(0.5), q(0.05), q(0.95)
}

// FromSamples builds a Result from raw samples, which it keeps.
func FromSamples(scenario, cas string, params map[string]any, metric, unit string, samples []float64) Result {
	n, m, lo, hi := Summary(samples)
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: n, Median: m, P05: lo, P95: hi,
		Samples: slices.Clone(samples)}
}

// Derived builds a Result for a single value computed in this run from
// other results (an overhead of two medians); note says how. Prefer
// PairedRatio, which keeps the spread, where rounds were interleaved.
func Derived(scenario, cas string, params map[string]any, metric, unit string, v float64, note string) Result {
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: 1, Median: v, P05: v, P95: v, Note: note}
}

// Quote builds a Result for a single figure quoted from elsewhere.
func Quote(scenario, cas string, params map[string]any, metric, unit string, v float64, source, note string) Result {
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: 1, Median: v, P05: v, P95: v, Source: source, Note: note}
}

// PairedRatio builds a ratio Result from interleaved rounds: num[i] and
// den[i] were measured in the same round, so num[i]/den[i] cancels what the
// machine was doing then. Its median and p05–p95 are those of the
// per-round ratios. Rounds of unequal count are not paired: see
// CrossRatio.
func PairedRatio(scenario, cas string, params map[string]any, metric string, num, den []float64, note string) Result {
	if len(num) != len(den) {
		return CrossRatio(scenario, cas, params, metric, num, den, note)
	}
	var ratios []float64
	for i := range num {
		if den[i] > 0 {
			ratios = append(ratios, num[i]/den[i])
		}
	}
	r := FromSamples(scenario, cas, params, metric, "x", ratios)
	r.Note = note
	return r
}

// Uncertain reports whether a ratio's spread is wider than the difference
// it claims: its p05–p95 interval reaches the other side of 1 (no
// difference) from its median.
func (r Result) Uncertain() bool {
	if r.Unit != "x" || r.N < 3 {
		return false
	}
	return (r.Median > 1 && r.P05 <= 1) || (r.Median < 1 && r.P95 >= 1)
}

// RatioText is a ratio as the report prints it, "1.23x (1.10–1.35)" — or,
// when its spread reaches the other side of 1 (Uncertain), "within noise
// (0.97–1.08)": a difference the machine's noise could make is never
// printed as a finding (docs/LAB.md, "How the lab measures").
func (r Result) RatioText() string {
	if r.N == 0 {
		return "–"
	}
	if r.Uncertain() {
		return "within noise (" + r.Spread() + ")"
	}
	s := FormatNumber(r.Median) + "x"
	if sp := r.Spread(); sp != "" {
		s += " (" + sp + ")"
	}
	return s
}

// OverheadText is RatioText for the ratio of a layer to what it wraps
// (the field layer over raw AES-GCM), which cannot be below 1: a median
// below 1 is noise, whatever its spread.
func (r Result) OverheadText() string {
	if r.N > 0 && r.Median < 1 {
		return "within noise (" + r.Spread() + ")"
	}
	return r.RatioText()
}

// AddedText is an amount a layer adds over what it wraps (ns per value),
// which cannot be negative, as the report prints it: "53.9 ns (45.0 to
// 70.8)" — or, when its p05 is not above 0 or its median is below it,
// "within noise (-8,628 to 24,498 ns)": a difference the machine's noise
// could make is never printed as a finding.
func (r Result) AddedText(unit string) string {
	if r.N == 0 {
		return "–"
	}
	if r.Median < 0 || (r.N >= 3 && r.P05 <= 0) {
		return "within noise (" + FormatNumber(r.P05) + " to " + FormatNumber(r.P95) + " " + unit + ")"
	}
	return FormatNumber(r.Median) + " " + unit + " (" + FormatNumber(r.P05) + " to " + FormatNumber(r.P95) + ")"
}

// Spread formats the p05–p95 interval, such as "1.02–1.09".
func (r Result) Spread() string {
	if r.N < 2 {
		return ""
	}
	return FormatNumber(r.P05) + "–" + FormatNumber(r.P95)
}

// FormatNumber prints a value with three significant digits, thousands
// separated; NaN prints as "–".
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if neg {
			return "-" + b.String()
		}
		return b.String()
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// maxCrossPairs bounds the samples a CrossRatio keeps.
const maxCrossPairs = 1024

// File names in a results folder.
const (
	ResultsCSV   = "results.csv"
	ResultsJSON  = "results.json"
	ManifestJSON = "manifest.json"
)

// csvHeader lists the CSV columns; params is a JSON object, samples are
// space-separated.
var csvHeader = []string{"scenario", "case", "params", "metric", "unit", "n", "median", "p05", "p95", "source", "note", "samples"}

// resultsDoc is the layout of results.json.
type resultsDoc struct {
	Schema   string   `json:"schema"`
	Manifest Manifest `json:"manifest"`
	Results  []Result `json:"results"`
}

// WriteDir writes results.csv, results.json and manifest.json into dir,
// creating it if needed.
func WriteDir(dir string, m Manifest, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestJSON), append(mj, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	rj, err := json.MarshalIndent(resultsDoc{Schema: Schema, Manifest: m, Results: results}, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsJSON), append(rj, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return writeCSV(filepath.Join(dir, ResultsCSV), results)
}

func writeCSV(path string, results []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write(csvHeader)
	for _, r := range results {
		params := r.Params
		if params == nil {
			params = map[string]any{}
		}
		p, _ := json.Marshal(maps.Clone(params)) // encoding/json sorts the keys
		samples := make([]string, len(r.Samples))
		for i, s := range r.Samples {
			samples[i] = formatFloat(s)
		}
		w.Write([]string{r.Scenario, r.Case, string(p), r.Metric, r.Unit, strconv.Itoa(r.N),
			formatFloat(r.Median), formatFloat(r.P05), formatFloat(r.P95), r.Source, r.Note, strings.Join(samples, " ")})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return f.Close()
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// ReadDir reads a results folder written by WriteDir, of schema v2 or v1.
func ReadDir(dir string) (Manifest, []Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultsJSON))
	if err != nil {
		return Manifest{}, nil, fmt.Errorf("lab: %w", err)
	}
	var doc resultsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return Manifest{}, nil, fmt.Errorf("lab: %s: %w", filepath.Join(dir, ResultsJSON), err)
	}
	if doc.Schema != Schema && doc.Schema != SchemaV1 {
		return Manifest{}, nil, fmt.Errorf("lab: %s has schema %q, want %q or %q", dir, doc.Schema, Schema, SchemaV1)
	}
	for i, r := range doc.Results {
		if r.Source == sourceSeedV1 {
			doc.Results[i].Source = SourceFieldReport
		}
	}
	return doc.Manifest, doc.Results, nil
}

// sourceSeedV1 is SourceFieldReport as schema v1 wrote it.
const sourceSeedV1 = "seed"

// Results is a set of results with look-ups by case and metric.
type Results []Result

// Get returns the result of a case and metric.
func (rs Results) Get(cas, metric string) (Result, bool) {
	for _, r := range rs {
		if r.Case == cas && r.Metric == metric {
			return r, true
		}
	}
	return Result{}, false
}

// Median returns the median of a case and metric, or NaN.
func (rs Results) Median(cas, metric string) float64 {
	r, ok := rs.Get(cas, metric)
	if !ok {
		return math.NaN()
	}
	return r.Median
}

// Where returns the results f accepts.
func (rs Results) Where(f func(Result) bool) Results {
	var out Results
	for _, r := range rs {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

// Num reads a numeric parameter whether it came from memory (an integer
// of any width a scenario recorded, such as the password parameters'
// uint32 and uint8) or JSON (float64); NaN if absent.
func Num(p map[string]any, k string) float64 {
	switch v := p[k].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case uint8:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return math.NaN()
}

// Str reads a parameter as text; "" if absent.
func Str(p map[string]any, k string) string {
	if v, ok := p[k]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

// CrossRatio builds a ratio Result from samples that were not measured in
// the same rounds (two processes, say): its spread comes from pairs of
// samples, num[i]/den[j] — every pair, or a fixed spread-out subset of
// maxCrossPairs of them when there are more.
func CrossRatio(scenario, cas string, params map[string]any, metric string, num, den []float64, note string) Result {
	var ratios []float64
	pairs := len(num) * len(den)
	step := 1
	if pairs > maxCrossPairs {
		step = (pairs + maxCrossPairs - 1) / maxCrossPairs
	}
	for k := 0; k < pairs; k += step {
		// Walk the pairs diagonally so a subset still covers every sample.
		i := k % len(num)
		j := (k/len(num) + i) % len(den)
		if den[j] > 0 {
			ratios = append(ratios, num[i]/den[j])
		}
	}
	r := FromSamples(scenario, cas, params, metric, "x", ratios)
	r.Note = note
	return r
}
