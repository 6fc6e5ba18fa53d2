package handshakelab

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
	"github.com/wardlab/ward/lab/peers"
	"github.com/wardlab/ward/pq/handshake"
)

// ratio is a comparison the section quotes: Num's handshake time over
// Den's, from the same run.
type ratio struct {
	name     string
	num, den Config
	note     string
	// byCPU compares the process's CPU time per handshake instead of the
	// elapsed time: for configurations with no delay, whose difference is
	// the computing alone (docs/LAB.md, "How the lab measures").
	byCPU bool
}

var (
	mlkem     = map[int]handshake.KEX{512: handshake.MLKEM512, 768: handshake.MLKEM768, 1024: handshake.MLKEM1024}
	hybrid    = map[int]handshake.KEX{512: handshake.X25519MLKEM512, 768: handshake.X25519MLKEM768, 1024: handshake.X25519MLKEM1024}
	x25519    = handshake.Suite{KEX: handshake.X25519}
	signed768 = handshake.Suite{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}
)

func signedVsHybrid(lvl int, model string) string {
	return fmt.Sprintf("signed-bundled-vs-hybrid/mlkem%d/%s/20ms", lvl, model)
}
func separateVsBundled(lvl int, model string) string {
	return fmt.Sprintf("signed-separate-vs-bundled/mlkem%d/%s/20ms", lvl, model)
}
func backendRatio(c Config) string { return "backend-stdlib-vs-circl/" + c.name() }

// ratios are the comparisons the field report's questions turn on.
func ratios() []ratio {
	var out []ratio
	d := 20 * time.Millisecond
	for _, model := range []string{SleepModel, LinkModel} {
		for _, lvl := range []int{512, 768, 1024} {
			s := handshake.Suite{KEX: mlkem[lvl], Sig: handshake.MLDSA65}
			bundled := Config{Suite: s, Model: model, Delay: d}
			out = append(out,
				ratio{signedVsHybrid(lvl, model), bundled, Config{Suite: handshake.Suite{KEX: hybrid[lvl]}, Model: model, Delay: d},
					"handshake time, signed (bundled flight) over hybrid, same level and model", false},
				ratio{separateVsBundled(lvl, model), Config{Suite: s, Layout: Separate, Model: model, Delay: d}, bundled,
					"handshake time, the report's separate writes over one bundled flight", false})
		}
	}
	for _, s := range []handshake.Suite{{KEX: handshake.MLKEM768}, {KEX: handshake.MLKEM1024}, {KEX: handshake.X25519MLKEM768}, signed768} {
		std := Config{Suite: s, Model: SleepModel}
		circl := std
		circl.Backend = handshake.Circl
		out = append(out, ratio{backendRatio(std), std, circl, "handshake CPU time at 0 ms, crypto/mlkem and crypto/mldsa over circl", true})
	}
	return out
}

// The field report's Python benchmark, run here.
func pythonCase(delayMS int) string {
	return fmt.Sprintf("python-cryptography/x25519/sleep/%dms", delayMS)
}
func pythonRatio(delayMS int) string {
	return fmt.Sprintf("python-cryptography-vs-ward/x25519/sleep/%dms", delayMS)
}

var pythonDelays = []int{0, 20}

// pythonPeer runs the report's X25519 benchmark in Python (Debian's
// cryptography) beside ward's x25519 suite under the same delay model.
func pythonPeer(ctx context.Context, env *lab.Env, runs int, times map[string][]float64) {
	pr, err := peers.New()
	if err != nil {
		env.Record(lab.Unavailable("handshake", pythonCase(0), lab.SourcePeer, err))
		return
	}
	defer pr.Close()
	for _, d := range pythonDelays {
		r, err := pr.X25519Python(ctx, d, runs)
		if err != nil {
			env.Record(lab.Unavailable("handshake", pythonCase(d), lab.SourcePeer, err))
			return
		}
		p := map[string]any{"mode": "x25519", "mechanism": "X25519", "delay_model": SleepModel, "delay_ms": d, "stack": "python3 + cryptography"}
		t := lab.FromSamples("handshake", pythonCase(d), p, "handshake_time", "ms", r.MS)
		b := lab.Quote("handshake", pythonCase(d), p, "wire_bytes", "B", float64(r.WireBytes), lab.SourcePeer, "both directions, length prefixes included")
		t.Source, t.Note = lab.SourcePeer, "the report's Python X25519 handshake over TCP (socket + cryptography, HKDF-SHA256), sleep-before-send delay"
		env.Record(t, b)
		ward := times[Config{Suite: x25519, Model: SleepModel, Delay: time.Duration(d) * time.Millisecond}.name()]
		if len(ward) > 0 {
			env.Record(lab.CrossRatio("handshake", pythonRatio(d), p, "ratio", r.MS, ward, "Python X25519 handshake time over ward's x25519 suite, same model, same run"))
		}
	}
}

// fieldReport is the report's table: means at 0/20/75 ms and bytes.
var fieldReport = []struct {
	suite handshake.Suite
	t     [3]float64
	bytes float64
}{
	{x25519, [3]float64{0.290, 40.56, 150.74}, 72},
	{handshake.Suite{KEX: handshake.MLKEM512}, [3]float64{0.257, 40.54, 150.57}, 1576},
	{handshake.Suite{KEX: handshake.MLKEM768}, [3]float64{0.283, 40.56, 150.72}, 2280},
	{handshake.Suite{KEX: handshake.MLKEM1024}, [3]float64{0.293, 40.63, 150.69}, 3144},
	{handshake.Suite{KEX: handshake.X25519MLKEM512}, [3]float64{0.506, 40.82, 150.90}, 1648},
	{handshake.Suite{KEX: handshake.X25519MLKEM768}, [3]float64{0.539, 40.77, 150.90}, 2352},
	{handshake.Suite{KEX: handshake.X25519MLKEM1024}, [3]float64{0.591, 40.81, 150.95}, 3216},
	{handshake.Suite{KEX: handshake.MLKEM512, Sig: handshake.MLDSA65}, [3]float64{0.714, 81.40, 301.60}, 6845},
	{signed768, [3]float64{0.731, 81.35, 301.49}, 7549},
	{handshake.Suite{KEX: handshake.MLKEM1024, Sig: handshake.MLDSA65}, [3]float64{0.771, 81.32, 301.62}, 8413},
}

func fieldTimeCase(s handshake.Suite, delay time.Duration) string {
	return fmt.Sprintf("field-report/%s/%s/%dms", s.Family(), s.Mechanism(), delay.Milliseconds())
}
func fieldBytesCase(s handshake.Suite) string {
	return fmt.Sprintf("field-report/%s/%s", s.Family(), s.Mechanism())
}

func recordFieldReport(env *lab.Env) {
	for _, f := range fieldReport {
		p := map[string]any{"mode": f.suite.Family(), "mechanism": f.suite.Mechanism()}
		for i, d := range Delays {
			env.Record(lab.Quote("handshake", fieldTimeCase(f.suite, d), map[string]any{"mode": p["mode"], "mechanism": p["mechanism"], "delay_model": SleepModel, "delay_ms": d.Milliseconds()},
				"handshake_time", "ms", f.t[i], lab.SourceFieldReport, "field report (Python + liboqs + cryptography), mean of 60 runs, measured elsewhere"))
		}
		env.Record(lab.Quote("handshake", fieldBytesCase(f.suite), p, "wire_bytes", "B", f.bytes, lab.SourceFieldReport,
			"field report: 4-byte length prefixes + payloads, both directions"))
	}
}

// Report builds the section: time against delay under both models,
// bytes, cryptography per backend, the report's table beside ward's, the
// ratios with their spread and the Python benchmark run here.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	if _, ok := rs.Get(Config{Suite: x25519, Model: SleepModel}.name(), "handshake_time"); !ok {
		return sec, nil
	}
	for _, f := range []func(lab.Results) (template.HTML, error){delayChart, bytesChart, cryptoChart} {
		c, err := f(rs)
		if err != nil {
			return sec, err
		}
		sec.Charts = append(sec.Charts, c)
	}
	sec.Tables = append(sec.Tables, fieldTable(rs), ratioTable(rs), floorTable(rs))
	answers(&sec, rs)
	for _, d := range pythonDelays {
		py, ok1 := rs.Get(pythonCase(d), "handshake_time")
		r, ok2 := rs.Get(pythonRatio(d), "ratio")
		ward := rs.Median(Config{Suite: x25519, Model: SleepModel, Delay: time.Duration(d) * time.Millisecond}.name(), "handshake_time")
		if ok1 && ok2 {
			sec.SameMachine = append(sec.SameMachine, fmt.Sprintf("the report's Python X25519 handshake (socket + cryptography) at %d ms: %s ms (p05–p95 %s); ward's x25519 suite %s ms; Python's time over ward's: %s.",
				d, lab.FormatNumber(py.Median), py.Spread(), lab.FormatNumber(ward), r.RatioText()))
			if d == 0 {
				sec.Headlines = append(sec.Headlines, r)
			}
		}
	}
	if len(sec.SameMachine) > 0 {
		sec.SameMachine = append(sec.SameMachine, "the report's ML-KEM and ML-DSA modes ran on liboqs, which Debian does not package: only its X25519 mode runs here.")
	}
	sec.FieldReport = fieldReportLine(rs)
	return sec, nil
}

func answers(sec *lab.Section, rs lab.Results) {
	if r, ok := rs.Get(signedVsHybrid(768, SleepModel), "ratio"); ok {
		sec.Answer = append(sec.Answer, fmt.Sprintf("With the server's flight bundled, ML-DSA-signed ML-KEM-768's handshake time over the hybrid's at 20 ms, per round: %s — one round trip, not two.",
			r.RatioText()))
		sec.Headlines = append(sec.Headlines, r)
	}
	if lo, hi, ok := floorRange(rs); ok {
		sec.Answer = append(sec.Answer, fmt.Sprintf("At 0 ms every suite takes %sx to %sx its floor on this machine (the cryptography on the critical path — key generation, KEM, X25519, signatures, key schedule, finished MACs, transcript hash — plus one loopback round trip, same backend): what is left above 1x is system calls, goroutine wake-ups (the server's accept among them) and framing.",
			lab.FormatNumber(lo), lab.FormatNumber(hi)))
	}
	if r, ok := rs.Get(separateVsBundled(768, SleepModel), "ratio"); ok {
		sec.Headlines = append(sec.Headlines, r)
		answer := fmt.Sprintf("The report's separate writes under its sleep-before-send model over one bundled flight: %s (the report's 2x)",
			r.RatioText())
		if link, ok := rs.Get(separateVsBundled(768, LinkModel), "ratio"); ok {
			answer += fmt.Sprintf(", but %s on a link model, where writes pipeline", link.RatioText())
			sec.Headlines = append(sec.Headlines, link)
		}
		sec.Answer = append(sec.Answer, answer+".")
	}
	if floor, ok := rs.Get(loopbackCase, "rtt"); ok {
		sec.Answer = append(sec.Answer, fmt.Sprintf("Transport floor: a 1-byte loopback round trip takes %s ms here (p05–p95 %s); every 0 ms handshake time includes it.",
			lab.FormatNumber(floor.Median), floor.Spread()))
	}
}

// chartSuites are the suites drawn against delay, above X25519.
var chartSuites = []handshake.Suite{{KEX: handshake.MLKEM768}, {KEX: handshake.X25519MLKEM768}, signed768}

// delayChart draws, against delay, each suite's handshake time above
// X25519's at the same delay (sleep model): total times lie on top of
// each other, since the delay decides them; what a suite adds does not.
func delayChart(rs lab.Results) (template.HTML, error) {
	line := func(c Config) plotter.XYs {
		var pts plotter.XYs
		for _, d := range Delays {
			c.Delay = d
			base := Config{Suite: x25519, Model: SleepModel, Delay: d}
			if v, b := rs.Median(c.name(), "handshake_time"), rs.Median(base.name(), "handshake_time"); !math.IsNaN(v) && !math.IsNaN(b) {
				pts = append(pts, plotter.XY{X: float64(d.Milliseconds()), Y: v - b})
			}
		}
		return pts
	}
	var ss []chart.Series
	for _, su := range chartSuites {
		ss = append(ss, chart.Series{Name: su.Mechanism(), Points: line(Config{Suite: su, Model: SleepModel})})
	}
	ss = append(ss, chart.Series{Name: "ML-KEM-768+ML-DSA-65, separate writes", Dashed: true,
		Points: line(Config{Suite: signed768, Layout: Separate, Model: SleepModel})})
	return chart.Line("Handshake time above X25519's, by one-way delay", chart.Axes{X: "one-way delay (ms)", Y: "ms more than X25519", XFormat: chart.Number}, ss)
}

func bytesChart(rs lab.Results) (template.HTML, error) {
	var labels []string
	vals := map[string][]float64{}
	for _, f := range fieldReport {
		labels = append(labels, f.suite.Mechanism())
		vals["ward"] = append(vals["ward"], rs.Median(Config{Suite: f.suite, Model: SleepModel}.name(), "wire_bytes"))
		vals["field report (elsewhere)"] = append(vals["field report (elsewhere)"], f.bytes)
	}
	return chart.Bars("Bytes on the wire per handshake", "bytes", labels, []string{"ward", "field report (elsewhere)"}, vals)
}

func cryptoChart(rs lab.Results) (template.HTML, error) {
	vals := map[string][]float64{}
	var labels []string
	for _, su := range []handshake.Suite{x25519, {KEX: handshake.MLKEM512}, {KEX: handshake.MLKEM768}, {KEX: handshake.MLKEM1024}, {KEX: handshake.X25519MLKEM768}, signed768} {
		labels = append(labels, su.Mechanism())
		for _, b := range []handshake.Backend{handshake.Stdlib, handshake.Circl} {
			n := Config{Suite: su, Backend: b, Model: SleepModel}.name()
			vals[b.String()] = append(vals[b.String()], rs.Median(n, "client_crypto")+rs.Median(n, "server_crypto"))
		}
	}
	return chart.Bars("Cryptography time per handshake (client + server), 0 ms", "ms", labels, []string{"stdlib", "circl"}, vals)
}

func fieldTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "The field report's table shape: ward's median ms (p05–p95) at 0 / 20 / 75 ms one-way (report's delay model, stdlib, bundled flight) and bytes, the report's means beside",
		Head: []string{"mechanism", "ward 0 ms", "ward 20 ms", "ward 75 ms", "ward bytes", "report 0 / 20 / 75 ms", "report bytes"}}
	for _, f := range fieldReport {
		row := []string{f.suite.Mechanism()}
		var quoted []string
		for _, d := range Delays {
			r, _ := rs.Get(Config{Suite: f.suite, Model: SleepModel, Delay: d}.name(), "handshake_time")
			row = append(row, lab.FormatNumber(r.Median)+" ("+r.Spread()+")")
			quoted = append(quoted, lab.FormatNumber(rs.Median(fieldTimeCase(f.suite, d), "handshake_time")))
		}
		row = append(row, lab.FormatNumber(rs.Median(Config{Suite: f.suite, Model: SleepModel}.name(), "wire_bytes")),
			strings.Join(quoted, " / "), lab.FormatNumber(f.bytes))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// floorTable sets each suite's 0 ms time beside its floor on this
// machine, per backend.
func floorTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "At 0 ms: time to a confirmed key over the floor (the run's cryptography on both sides plus one loopback round trip), median and p05–p95 per run",
		Head: []string{"suite", "backend", "time ms", "floor ms", "time / floor", "p05–p95"}}
	for _, c := range Configs() {
		if !c.atFloor() {
			continue
		}
		r, ok := rs.Get(c.name(), "floor_ratio")
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, []string{c.Suite.Mechanism(), c.Backend.String(), lab.FormatNumber(rs.Median(c.name(), "handshake_time")),
			lab.FormatNumber(rs.Median(c.name(), "floor")), lab.FormatNumber(r.Median) + "x", r.Spread()})
	}
	return t
}

func ratioTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "Ratios of handshake times, same run: median and p05–p95 of the per-round ratios (configurations interleaved round by round), \"within noise\" where the spread reaches past 1",
		Head: []string{"comparison", "clock", "ratio (p05–p95)"}}
	for _, r := range ratios() {
		if v, ok := rs.Get(r.name, "ratio"); ok {
			t.Rows = append(t.Rows, []string{r.name, lab.Str(v.Params, "clock"), v.RatioText()})
		}
	}
	return t
}

// fieldReportLine states the report's figures from its recorded quotes
// (the fieldReport table, the only place they are written): time at 0 and
// 20 ms for X25519, the ML-KEM-768 hybrid and the signed suite, and bytes.
func fieldReportLine(rs lab.Results) string {
	var parts []string
	for _, su := range []handshake.Suite{x25519, {KEX: handshake.X25519MLKEM768}, signed768} {
		var ts []string
		for _, d := range Delays[:2] {
			if r, ok := rs.Get(fieldTimeCase(su, d), "handshake_time"); ok {
				ts = append(ts, fmt.Sprintf("%s ms at %d ms", lab.FormatNumber(r.Median), d.Milliseconds()))
			}
		}
		if b, ok := rs.Get(fieldBytesCase(su), "wire_bytes"); ok {
			ts = append(ts, lab.FormatNumber(b.Median)+" bytes")
		}
		if len(ts) > 0 {
			parts = append(parts, su.Mechanism()+": "+strings.Join(ts, ", "))
		}
	}
	return "Python + liboqs + cryptography, means of 60 runs, one-way delay: " + strings.Join(parts, "; ") + "."
}

// floorRange returns the smallest and largest median ratio to the floor.
func floorRange(rs lab.Results) (lo, hi float64, ok bool) {
	for _, r := range rs.Where(func(r lab.Result) bool { return r.Metric == "floor_ratio" }) {
		if !ok || r.Median < lo {
			lo = r.Median
		}
		if !ok || r.Median > hi {
			hi = r.Median
		}
		ok = true
	}
	return lo, hi, ok
}
