// Package lab runs ward's experiments and records their results.
//
// Every scenario (aead, password, kms, handshake, tls, …) reports
// [Result] rows in one schema, so that one writer, one report and one
// comparison tool serve them all. A results folder holds results.csv,
// results.json and manifest.json (the machine the numbers came from).
package lab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
)

// Schema names the result format; it changes only incompatibly.
const Schema = "ward-lab/v1"

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
	// Source is empty for a value measured in this run, "seed" for a
	// figure quoted from a seed report (measured elsewhere, on other
	// hardware), or "reference" for an external tool measured here.
	Source string `json:"source,omitempty"`
	// Note explains how a value was derived or where it was quoted from.
	Note string `json:"note,omitempty"`
}

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

// FromSamples builds a Result from raw samples.
func FromSamples(scenario, cas string, params map[string]any, metric, unit string, samples []float64) Result {
	n, m, lo, hi := Summary(samples)
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: n, Median: m, P05: lo, P95: hi}
}

// Derived builds a Result for a single value computed in this run from
// other results (a ratio of medians, an overhead); note says how.
func Derived(scenario, cas string, params map[string]any, metric, unit string, v float64, note string) Result {
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: 1, Median: v, P05: v, P95: v, Note: note}
}

// Quote builds a Result for a single figure quoted from elsewhere.
func Quote(scenario, cas string, params map[string]any, metric, unit string, v float64, source, note string) Result {
	return Result{Scenario: scenario, Case: cas, Params: params, Metric: metric, Unit: unit, N: 1, Median: v, P05: v, P95: v, Source: source, Note: note}
}

// File names in a results folder.
const (
	ResultsCSV   = "results.csv"
	ResultsJSON  = "results.json"
	ManifestJSON = "manifest.json"
)

// csvHeader lists the CSV columns; params is a JSON object.
var csvHeader = []string{"scenario", "case", "params", "metric", "unit", "n", "median", "p05", "p95", "source", "note"}

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
	f, err := os.Create(filepath.Join(dir, ResultsCSV))
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write(csvHeader)
	for _, r := range results {
		p, _ := json.Marshal(sortedParams(r.Params))
		w.Write([]string{r.Scenario, r.Case, string(p), r.Metric, r.Unit, strconv.Itoa(r.N),
			formatFloat(r.Median), formatFloat(r.P05), formatFloat(r.P95), r.Source, r.Note})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return f.Close()
}

// sortedParams returns params unchanged (encoding/json sorts map keys);
// it exists so that nil becomes {} rather than null.
func sortedParams(p map[string]any) map[string]any {
	if p == nil {
		return map[string]any{}
	}
	return maps.Clone(p)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// ReadDir reads a results folder written by WriteDir.
func ReadDir(dir string) (Manifest, []Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultsJSON))
	if err != nil {
		return Manifest{}, nil, fmt.Errorf("lab: %w", err)
	}
	var doc resultsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return Manifest{}, nil, fmt.Errorf("lab: %s: %w", filepath.Join(dir, ResultsJSON), err)
	}
	if doc.Schema != Schema {
		return Manifest{}, nil, fmt.Errorf("lab: %s has schema %q, want %q", dir, doc.Schema, Schema)
	}
	return doc.Manifest, doc.Results, nil
}
