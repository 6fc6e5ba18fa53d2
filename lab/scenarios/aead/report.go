package aeadlab

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
	"github.com/wardlab/ward/lab/peers"
)

// Report builds the section: throughput by size with hardware AES on and
// off, the field layer's overhead, and the field report's figures.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	sizes := measuredSizes(rs)
	if len(sizes) == 0 {
		return sec, nil
	}
	c, err := throughputChart(rs, sizes)
	if err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, c)
	sec.Tables = append(sec.Tables, throughputTable(rs, sizes), ratioTable(rs, sizes), versionTable(rs, sizes))
	big := sizes[len(sizes)-1]
	hw, hwOK := rs.Get(ratioKey{keyring.AES256GCM, "seal", big}.hwSpeedup(), "hw_speedup")
	ov500, _ := rs.Get(ratioKey{keyring.AES256GCM, "seal", 500}.fieldOverhead(), "field_overhead")
	ovBig, _ := rs.Get(ratioKey{keyring.AES256GCM, "seal", big}.fieldOverhead(), "field_overhead")
	if hwOK {
		sec.Answer = append(sec.Answer, fmt.Sprintf("Hardware AES makes AES-256-GCM %sx faster at %s here (p05–p95 %s); XChaCha20-Poly1305, which needs no AES hardware, is the choice without it.",
			lab.FormatNumber(hw.Median), sizeLabel(big), hw.Spread()))
		sec.Headlines = append(sec.Headlines, hw)
	}
	sec.Answer = append(sec.Answer, fmt.Sprintf("ward's field layer (header, key ID, keyed context check, binding) adds %s at 500 B and %s at %s, per interleaved round.",
		percent(ov500), percent(ovBig), sizeLabel(big)))
	sec.Headlines = append(sec.Headlines, ov500, ovBig)
	sec.Answer = append(sec.Answer, versionAnswer(rs))
	if a, ok := tinkAnswer(rs); ok {
		sec.Answer = append(sec.Answer, a)
	}
	if t, ok := tinkTable(rs, sizes); ok {
		sec.Tables = append(sec.Tables, t)
	}
	if a, ok := pythonAnswer(rs); ok {
		sec.Answer = append(sec.Answer, a)
	}
	if t, ok := pythonTable(rs); ok {
		sec.Tables = append(sec.Tables, t)
	}
	if t, ok := pythonPartsTable(rs); ok {
		sec.Tables = append(sec.Tables, t)
	}
	if t, ok := javaTable(rs); ok {
		sec.Tables = append(sec.Tables, t)
	}
	sec.SameMachine = sameMachine(rs)
	if r, ok := rs.Get(jvmSpeedup(peers.AESIntrinsicsOff, big), "hw_speedup"); ok {
		sec.Headlines = append(sec.Headlines, r)
	}
	var quotes []string
	for _, q := range rs.Where(func(r lab.Result) bool { return r.Source == lab.SourceFieldReport }) {
		quotes = append(quotes, fmt.Sprintf("%sx (%s)", lab.FormatNumber(q.Median), q.Note))
	}
	sec.FieldReport = "Java AES-GCM with AES intrinsics on vs off: " + strings.Join(quotes, "; ")
	return sec, nil
}

// percent prints a ratio as an overhead with its spread: "+16 % (+12 to +19)".
func percent(r lab.Result) string {
	if r.N == 0 {
		return "–"
	}
	p := func(v float64) string { return fmt.Sprintf("%+.0f %%", (v-1)*100) }
	if strings.HasPrefix(r.OverheadText(), "within noise") { // never a cost below 0, nor one the noise could make
		return fmt.Sprintf("within noise (p05–p95 %s to %s)", p(r.P05), p(r.P95))
	}
	return fmt.Sprintf("%s (p05–p95 %s to %s)", p(r.Median), p(r.P05), p(r.P95))
}

func measuredSizes(rs lab.Results) []int {
	var out []int
	for _, size := range Sizes {
		if _, ok := rs.Get(caseKey{keyring.AES256GCM, "seal", size, "raw", "on"}.name(), "throughput"); ok {
			out = append(out, size)
		}
	}
	return out
}

func sizeLabel(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func throughputChart(rs lab.Results, sizes []int) (template.HTML, error) {
	var ss []chart.Series
	for _, alg := range keyring.Algorithms() {
		for _, v := range []struct{ hw, label string }{{"on", "AES hardware on"}, {"off", "AES hardware off"}} {
			var pts plotter.XYs
			for _, size := range sizes {
				if y := rs.Median(caseKey{alg, "seal", size, "raw", v.hw}.name(), "throughput"); !math.IsNaN(y) && y > 0 {
					pts = append(pts, plotter.XY{X: float64(size), Y: y})
				}
			}
			ss = append(ss, chart.Series{Name: alg.String() + ", " + v.label, Points: pts, Dashed: v.hw == "off"})
		}
	}
	return chart.Line("Seal throughput by value size", chart.Axes{X: "value size", Y: "MB/s", LogX: true, LogY: true, XFormat: chart.Bytes}, ss)
}

func throughputTable(rs lab.Results, sizes []int) lab.Table {
	head := []string{"algorithm"}
	for _, size := range sizes {
		head = append(head, sizeLabel(size))
	}
	t := lab.Table{Caption: "Seal throughput, MB/s: raw crypto/cipher / ward field layer / raw with GODEBUG=cpu.aes=off", Head: head}
	for _, alg := range keyring.Algorithms() {
		row := []string{alg.String()}
		for _, size := range sizes {
			m := func(impl, hw string) string {
				return lab.FormatNumber(rs.Median(caseKey{alg, "seal", size, impl, hw}.name(), "throughput"))
			}
			row = append(row, m("raw", "on")+" / "+m("field", "on")+" / "+m("raw", "off"))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func ratioTable(rs lab.Results, sizes []int) lab.Table {
	t := lab.Table{Caption: "Hardware AES speed-up (time off / on) and field layer overhead over raw crypto/cipher, with p05–p95",
		Head: []string{"algorithm", "op", "size", "hw speed-up", "field overhead"}}
	for _, alg := range keyring.Algorithms() {
		for _, op := range []string{"seal", "open"} {
			for _, size := range sizes {
				k := ratioKey{alg, op, size}
				hw, _ := rs.Get(k.hwSpeedup(), "hw_speedup")
				ov, _ := rs.Get(k.fieldOverhead(), "field_overhead")
				t.Rows = append(t.Rows, []string{alg.String(), op, sizeLabel(size),
					hw.RatioText(), percent(ov)})
			}
		}
	}
	return t
}

// versionAnswer says what ciphertext v4 and v3 add per value over raw
// AES-256-GCM, and the field layer's cost in the FIPS 140-3 mode.
func versionAnswer(rs lab.Results) string {
	added := func(impl, op string, size int) string {
		r, _ := rs.Get(ratioKey{keyring.AES256GCM, op, size}.addedNs(impl), "added_ns")
		return r.AddedText("ns")
	}
	s := fmt.Sprintf("Ciphertext v4 (a key per column, the nonce drawn by the AEAD) adds %s per seal and %s per open at 64 B, %s and %s at 500 B, over raw AES-256-GCM; v3 adds %s and %s at 500 B.",
		added(implV4, "seal", 64), added(implV4, "open", 64), added(implV4, "seal", 500), added(implV4, "open", 500),
		added(implV3, "seal", 500), added(implV3, "open", 500))
	if f, ok := rs.Get(ratioKey{keyring.AES256GCM, "seal", 500}.fipsOverhead(), "field_overhead"); ok {
		s += fmt.Sprintf(" In the FIPS 140-3 mode (GODEBUG=fips140=only), against raw AES-GCM whose nonce the module draws too, sealing 500 B costs %s.", percent(f))
	}
	return s
}

// versionTable compares ciphertext v4, v3 and (in the FIPS 140-3 mode) v4
// with raw AES-GCM.
func versionTable(rs lab.Results, sizes []int) lab.Table {
	t := lab.Table{Caption: "The field layer by ciphertext version: ns added per value over raw AES-GCM (per-round differences), overhead, and overhead in the FIPS 140-3 mode, with p05–p95",
		Head: []string{"algorithm", "op", "size", "v4 adds", "v3 adds", "v4 overhead", "v3 overhead", "v4 overhead, FIPS mode"}}
	for _, alg := range []keyring.Algorithm{keyring.AES128GCM, keyring.AES256GCM} {
		for _, op := range []string{"seal", "open"} {
			for _, size := range sizes {
				k := ratioKey{alg, op, size}
				v4, _ := rs.Get(k.addedNs(implV4), "added_ns")
				v3, _ := rs.Get(k.addedNs(implV3), "added_ns")
				o4, _ := rs.Get(k.fieldOverhead(), "field_overhead")
				o3, _ := rs.Get(k.v3Overhead(), "field_overhead")
				f, _ := rs.Get(k.fipsOverhead(), "field_overhead")
				t.Rows = append(t.Rows, []string{alg.String(), op, sizeLabel(size), v4.AddedText("ns"), v3.AddedText("ns"), percent(o4), percent(o3), percent(f)})
			}
		}
	}
	return t
}
