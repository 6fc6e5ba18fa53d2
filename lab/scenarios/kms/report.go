package kmslab

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
)

// methodOrder is the order of the report's rows.
var methodOrder = []string{"legacy-aes-256-cbc-fixed-iv", "field-local-key", "kms-per-call", "envelope-cached", "envelope-per-message"}

// Report builds the section: seconds per 1,000 by method and round trip,
// the cold first operations, the envelope's speed-ups, and the report's
// own cipher on this machine.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	rtts := []string{"0ms", "1ms", "8ms"}
	if _, ok := rs.Get(caseKey{"kms-per-call", "real", "encrypt"}.name(), "s_per_1000"); ok {
		rtts = []string{"real"}
	} else if _, ok := rs.Get(caseKey{"kms-per-call", "0ms", "encrypt"}.name(), "s_per_1000"); !ok {
		return sec, nil // nothing measured
	}
	sec.Tables = append(sec.Tables, totalsTable(rs, rtts), coldTable(rs, rtts))
	if rtts[0] != "real" {
		c, err := rttChart(rs, rtts)
		if err != nil {
			return sec, err
		}
		sec.Charts = append(sec.Charts, c)
	}
	for _, r := range rs.Where(func(r lab.Result) bool { return r.Metric == "speedup" }) {
		sec.Answer = append(sec.Answer, fmt.Sprintf("At %v added RTT, envelope encryption with cached data keys against calling the KMS for every value, per-call time over envelope time per round: %s.",
			r.Params["added_rtt"], r.RatioText()))
		sec.Headlines = append(sec.Headlines, r)
	}
	if r, ok := rs.Get(vsFieldCase("0ms"), "ratio"); ok {
		sec.Answer = append(sec.Answer, fmt.Sprintf("With a warm cache, an envelope operation's CPU time over a field-layer operation's with a local key, per round: %s. KMS custody at near-local speed.",
			r.RatioText()))
		sec.Headlines = append(sec.Headlines, r)
	}
	sec.Answer = append(sec.Answer, "The report's AES-256-CBC with a fixed key and IV is shown only as a legacy baseline: it is unauthenticated and deterministic.")
	sec.SameMachine = sameMachine(rs)
	sec.FieldReport = fieldReportLine(rs)
	return sec, nil
}

func totalsTable(rs lab.Results, rtts []string) lab.Table {
	t := lab.Table{Caption: "Seconds per 1,000 operations, median of repeated batches (p05–p95): encrypt / decrypt",
		Head: []string{"method", "where", "encrypt s", "decrypt s"}}
	for _, m := range methodOrder {
		for _, rtt := range rtts {
			e, ok := rs.Get(caseKey{m, rtt, "encrypt"}.name(), "s_per_1000")
			if !ok {
				continue
			}
			d, _ := rs.Get(caseKey{m, rtt, "decrypt"}.name(), "s_per_1000")
			where := "+" + rtt + " RTT"
			if m == "legacy-aes-256-cbc-fixed-iv" || m == "field-local-key" || rtt == "real" {
				where = "local"
			}
			t.Rows = append(t.Rows, []string{m, where, withSpread(e), withSpread(d)})
		}
	}
	for _, q := range []string{"openssl-aes-256-cbc", "aws-kms", "aws-kms-vpc-endpoint"} {
		t.Rows = append(t.Rows, []string{"field report: " + q, "elsewhere",
			lab.FormatNumber(rs.Median("field-report/"+q+"/encrypt", "s_per_1000")), lab.FormatNumber(rs.Median("field-report/"+q+"/decrypt", "s_per_1000"))})
	}
	return t
}

func withSpread(r lab.Result) string {
	if r.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", lab.FormatNumber(r.Median), r.Spread())
}

func coldTable(rs lab.Results, rtts []string) lab.Table {
	t := lab.Table{Caption: "The first operation of a fresh client, ms (not in the seconds per 1,000): encrypt / decrypt",
		Head: []string{"method", "where", "first encrypt ms", "first decrypt ms"}}
	for _, m := range methodOrder {
		for _, rtt := range rtts {
			e, ok := rs.Get(caseKey{m, rtt, "encrypt"}.name()+"/cold", "first_op")
			if !ok {
				continue
			}
			d, _ := rs.Get(caseKey{m, rtt, "decrypt"}.name()+"/cold", "first_op")
			t.Rows = append(t.Rows, []string{m, "+" + rtt + " RTT", lab.FormatNumber(e.Median), lab.FormatNumber(d.Median)})
		}
	}
	return t
}

func rttChart(rs lab.Results, rtts []string) (template.HTML, error) {
	var ss []chart.Series
	for _, m := range []string{"kms-per-call", "envelope-per-message", "envelope-cached"} {
		var pts plotter.XYs
		for i, rtt := range rtts {
			if v := rs.Median(caseKey{m, rtt, "encrypt"}.name(), "s_per_1000"); !math.IsNaN(v) && v > 0 {
				pts = append(pts, plotter.XY{X: []float64{0, 1, 8}[i], Y: v})
			}
		}
		ss = append(ss, chart.Series{Name: m, Points: pts})
	}
	if v := rs.Median(caseKey{"field-local-key", "0ms", "encrypt"}.name(), "s_per_1000"); v > 0 {
		ss = append(ss, chart.Series{Name: "field-local-key (no KMS)", Points: plotter.XYs{{X: 0, Y: v}, {X: 8, Y: v}}, Dashed: true})
	}
	return chart.Line("Seconds per 1,000 encryptions vs added KMS round trip", chart.Axes{X: "added round trip to the KMS (ms)", Y: "seconds (log)", LogY: true}, ss)
}

func sameMachine(rs lab.Results) []string {
	rb, ok := rs.Get(caseKey{"ruby-openssl-aes-256-cbc", "local", "encrypt"}.name(), "s_per_1000")
	if !ok {
		return nil
	}
	rbd, _ := rs.Get(caseKey{"ruby-openssl-aes-256-cbc", "local", "decrypt"}.name(), "s_per_1000")
	fe, _ := rs.Get(caseKey{"field-local-key", "0ms", "encrypt"}.name(), "s_per_1000")
	fd, _ := rs.Get(caseKey{"field-local-key", "0ms", "decrypt"}.name(), "s_per_1000")
	return []string{fmt.Sprintf("The report's Ruby OpenSSL AES-256-CBC (fixed key and IV) here: %s s / %s s per 1,000; ward's field AEAD (AES-256-GCM, authenticated, random nonce, bound to its row) here: %s s / %s s; Ruby / ward = %sx / %sx. The report quoted 0.0066 s / 0.0037 s on its machine.",
		lab.FormatNumber(rb.Median), lab.FormatNumber(rbd.Median), lab.FormatNumber(fe.Median), lab.FormatNumber(fd.Median),
		lab.FormatNumber(rb.Median/fe.Median), lab.FormatNumber(rbd.Median/fd.Median))}
}

// fieldReportLine states the report's figures from its recorded quotes
// (kms.go's fieldReport, the only place they are written).
func fieldReportLine(rs lab.Results) string {
	var parts []string
	for _, m := range []struct{ key, name string }{
		{"openssl-aes-256-cbc", "OpenSSL AES-256-CBC"}, {"aws-kms", "AWS KMS"}, {"aws-kms-vpc-endpoint", "via a VPC endpoint"}} {
		enc, ok1 := rs.Get(fieldReportCase(m.key, "encrypt"), "s_per_1000")
		dec, ok2 := rs.Get(fieldReportCase(m.key, "decrypt"), "s_per_1000")
		if ok1 && ok2 {
			parts = append(parts, fmt.Sprintf("%s %s s / %s s", m.name, lab.FormatNumber(enc.Median), lab.FormatNumber(dec.Median)))
		}
	}
	return "Ruby, 1,000 operations (encrypt / decrypt): " + strings.Join(parts, "; ") + "."
}
