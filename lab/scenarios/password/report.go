package passwordlab

import (
	"fmt"
	"math"
	"strings"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
)

// otherImpls are the implementations set beside ward, in table order,
// and implLabels what the table calls them.
var (
	otherImpls = []string{"x-crypto", "c-reference", "rust-argon2", "libsodium"}
	implLabels = map[string]string{"ward": "ward", "x-crypto": "x/crypto", "c-reference": "C", "rust-argon2": "Rust", "libsodium": "libsodium"}
)

// argon2Head is the Argon2 table's header: a column per implementation, a
// ratio per other one, ward's heap and every peak RSS.
func argon2Head() []string {
	head := []string{"parameters", "ward"}
	var ratios, rss []string
	for _, o := range otherImpls {
		head = append(head, implLabels[o])
		ratios = append(ratios, "ward / "+implLabels[o])
	}
	for _, o := range append([]string{"ward"}, otherImpls...) {
		rss = append(rss, implLabels[o])
	}
	head = append(head, ratios...)
	return append(head, "ward heap B/hash", "peak RSS MiB: "+strings.Join(rss, " / "))
}

// Report builds the section: Argon2 by implementation, the legacy
// schemes, sign-up bursts, and the report's own stack on this machine.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	t, labels, vals := argon2Table(rs)
	sec.Tables = append(sec.Tables, t)
	if len(labels) > 0 {
		short := make([]string, len(labels)) // the title says Argon2id
		for i, l := range labels {
			short[i] = strings.ReplaceAll(strings.TrimPrefix(l, "argon2id "), ",", " ")
		}
		c, err := chart.Bars("Argon2id per hash, by implementation", "ms", short,
			append([]string{"ward"}, otherImpls...), vals)
		if err != nil {
			return sec, err
		}
		sec.Charts = append(sec.Charts, c)
	}
	sec.Tables = append(sec.Tables, legacyTable(rs), burstTable(rs))
	if t := springTable(rs); len(t.Rows) > 0 {
		sec.Tables = append(sec.Tables, t)
	}
	sec.Answer, sec.Headlines = answers(rs)
	sec.SameMachine = sameMachine(rs)
	var notes []string
	for _, q := range rs.Where(func(r lab.Result) bool { return r.Source == lab.SourceFieldReport }) {
		notes = append(notes, fmt.Sprintf("%s %s (%s)", lab.FormatNumber(q.Median), q.Unit, q.Note))
	}
	sec.FieldReport = strings.Join(notes, "; ")
	return sec, nil
}

func argon2Table(rs lab.Results) (lab.Table, []string, map[string][]float64) {
	t := lab.Table{Caption: "Argon2id, ms per hash as a user waits for it: median (p95); ward's CPU time over each other's (the process's, every thread) per interleaved round, with p05–p95, \"within noise\" where it reaches past 1 (C: the reference phc-winner-argon2; Rust: the RustCrypto argon2 crate)",
		Head: argon2Head()}
	vals := map[string][]float64{}
	var labels []string
	for _, c := range argon2Cases {
		w, ok := rs.Get(implKey{c, "ward"}.name(), "hash_latency")
		if !ok {
			continue
		}
		labels = append(labels, c.params.String())
		row := []string{c.params.String() + " (" + lab.Str(w.Params, "simd") + ")", cell(w)}
		vals["ward"] = append(vals["ward"], w.Median)
		for _, o := range otherImpls {
			r, _ := rs.Get(implKey{c, o}.name(), "hash_latency")
			row = append(row, cell(r))
			vals[o] = append(vals[o], nanIfEmpty(r))
		}
		for _, o := range otherImpls {
			r, _ := rs.Get(vsKey(c, o), "ratio")
			row = append(row, ratioCell(r))
		}
		row = append(row, lab.FormatNumber(rs.Median(implKey{c, "ward"}.name(), "bytes_allocated")))
		var rss []string
		for _, impl := range append([]string{"ward"}, otherImpls...) {
			rss = append(rss, lab.FormatNumber(rs.Median(implKey{c, impl}.name(), "peak_rss")))
		}
		row = append(row, strings.Join(rss, " / "))
		t.Rows = append(t.Rows, row)
	}
	return t, labels, vals
}

func cell(r lab.Result) string {
	if r.N == 0 {
		return "not run"
	}
	return fmt.Sprintf("%s (%s)", lab.FormatNumber(r.Median), lab.FormatNumber(r.P95))
}

// ratioCell is a ratio under the significance rule (lab.Result.RatioText).
func ratioCell(r lab.Result) string { return r.RatioText() }

func nanIfEmpty(r lab.Result) float64 {
	if r.N == 0 {
		return math.NaN()
	}
	return r.Median
}

func legacyTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "Other schemes through the Hasher, ms per hash", Head: []string{"scheme", "parameters", "median", "p95"}}
	for _, l := range legacy {
		r, _ := rs.Get(l.name, "hash_latency")
		t.Rows = append(t.Rows, []string{l.name, l.params.String(), lab.FormatNumber(r.Median), lab.FormatNumber(r.P95)})
	}
	return t
}

func burstTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "Sign-up bursts at the report's parameters (Argon2id m=16384, t=2, p=1)",
		Head: []string{"concurrent", "mode", "burst ms (p95)", "request p95 ms", "peak RSS MiB", "vs ceil(n/cores) × one hash"}}
	for _, n := range Bursts {
		for _, mode := range []string{"unlimited", "limiter"} {
			k := burstKey{n, mode}
			b, ok := rs.Get(k.name(), "burst_time")
			if !ok {
				continue
			}
			rl, _ := rs.Get(k.name(), "request_latency")
			ideal, _ := rs.Get(k.name(), "burst_vs_ideal")
			t.Rows = append(t.Rows, []string{fmt.Sprint(n), mode, cell(b), lab.FormatNumber(rl.P95),
				lab.FormatNumber(rs.Median(k.name(), "peak_rss")), ratioCell(ideal)})
		}
	}
	return t
}

func answers(rs lab.Results) ([]string, []lab.Result) {
	var out []string
	var heads []lab.Result
	rep, owasp := argon2Cases[0], argon2Cases[1]
	if w, ok := rs.Get(implKey{rep, "ward"}.name(), "hash_latency"); ok {
		out = append(out, fmt.Sprintf("Argon2id at the report's parameters takes %s ms per hash here with ward's %s core (%s ms at OWASP's), measured in interleaved rounds; implementations are compared by CPU time.",
			lab.FormatNumber(w.Median), lab.Str(w.Params, "simd"), lab.FormatNumber(rs.Median(implKey{owasp, "ward"}.name(), "hash_latency"))))
		heads = append(heads, w)
	}
	for _, o := range otherImpls {
		if r, ok := rs.Get(vsKey(rep, o), "ratio"); ok {
			out = append(out, fmt.Sprintf("ward / %s: %s, per round.", implLabels[o], r.RatioText()))
			heads = append(heads, r)
		}
	}
	if v, ok := rs.Get(burstKey{10, "limiter"}.name(), "burst_vs_ideal"); ok {
		out = append(out, fmt.Sprintf("10 concurrent sign-ups with the limiter take %sx the ideal ceil(10/cores) hashes (p05–p95 %s); the limiter bounds memory and tail latency, not total time.",
			lab.FormatNumber(v.Median), v.Spread()))
		heads = append(heads, v)
	}
	return out, heads
}

func sameMachine(rs lab.Results) []string {
	var out []string
	warm, ok := rs.Get(jvmWarm, "hash_latency")
	if !ok {
		return springLines(rs)
	}
	ward, _ := rs.Get(implKey{argon2Cases[0], "ward"}.name(), "hash_latency")
	cold, _ := rs.Get(jvmCold, "hash_latency")
	vs, _ := rs.Get(jvmVsWard, "ratio")
	out = append(out, fmt.Sprintf("Spring Security's engine (BouncyCastle in the JVM) here: %s ms warm, %s ms for a fresh JVM's first hash; ward here: %s ms; JVM / ward = %s. The report quoted 450 ms on its machine.",
		lab.FormatNumber(warm.Median), lab.FormatNumber(cold.Median), lab.FormatNumber(ward.Median), vs.RatioText()))
	if b, ok := rs.Get(jvmBurst, "burst_time"); ok {
		wb, _ := rs.Get(burstKey{10, "limiter"}.name(), "burst_time")
		out = append(out, fmt.Sprintf("10 concurrent sign-ups: %s ms in the JVM, %s ms with ward's limiter, here (the report: 4,500 ms).",
			lab.FormatNumber(b.Median), lab.FormatNumber(wb.Median)))
	}
	return append(out, springLines(rs)...)
}

// springTable is the report's own stack on this machine: Spring Security's
// Argon2PasswordEncoder beside ward-java's encoder, in the same JVMs.
func springTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "On the JVM: Spring Security's Argon2PasswordEncoder and ward-java's WardPasswordEncoder, interleaved in the same JVMs",
		Head: []string{"case", "parameters", "ms (p95)"}}
	for _, c := range []struct{ cas, label string }{
		{springEncode, "Spring: encode"}, {wardJavaSame, "ward-java: encode, same parameters"},
		{wardJavaOWASP, "ward-java: encode, its default preset"}, {springMatches, "Spring: matches"},
		{wardJavaLogin, "ward-java: log-in on Spring's hash (matches + upgradeEncoding)"},
		{springBurst, "Spring: 10 concurrent encodes"}, {wardJavaBurst, "ward-java: 10 concurrent encodes"},
	} {
		r, ok := rs.Get(c.cas, "hash_latency")
		if !ok {
			r, ok = rs.Get(c.cas, "burst_time")
		}
		if ok {
			t.Rows = append(t.Rows, []string{c.label, lab.Str(r.Params, "params"), cell(r)})
		}
	}
	return t
}

// springLines says what ward-java costs a Spring team, from springStack.
func springLines(rs lab.Results) []string {
	vs, ok := rs.Get(wardJavaVsSpring, "ratio")
	if !ok {
		return nil
	}
	sp, _ := rs.Get(springEncode, "hash_latency")
	ow, _ := rs.Get(wardJavaOWASP, "hash_latency")
	out := []string{fmt.Sprintf("On the report's own stack: Spring's Argon2PasswordEncoder %s ms per encode; ward-java's encoder at the same parameters %s of Spring's (interleaved in one JVM), %s ms at ward's default preset.",
		lab.FormatNumber(sp.Median), vs.RatioText(), lab.FormatNumber(ow.Median))}
	if g, ok := rs.Get(wardJavaVsGo, "ratio"); ok {
		out = append(out, fmt.Sprintf("ward-java / Go ward at the same parameters: %s.", g.RatioText()))
	}
	return out
}
