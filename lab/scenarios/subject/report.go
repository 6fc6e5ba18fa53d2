package subjectlab

import (
	"fmt"
	"html/template"
	"math"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
)

// Report builds the section: per-value cost warm and cold, log-in, forget
// by number of values, and re-wrap by workers.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	db, ok := rs.Get(caseDB, "database")
	if !ok {
		return sec, nil
	}
	dbName := lab.Str(db.Params, "database")
	seal, sealOK := rs.Get(ratioCase("seal"), "ratio")
	open, _ := rs.Get(ratioCase("open"), "ratio")
	if sealOK {
		sec.Answer = append(sec.Answer, fmt.Sprintf("A 500 B value under its user's own key costs %sx (seal, p05–p95 %s) and %sx (open, %s) one under a keyring key while the user's key is cached; a cold open (key row and tombstone read, one unwrap) takes %s µs on %s, of which the unwrap is %s µs.",
			lab.FormatNumber(seal.Median), seal.Spread(), lab.FormatNumber(open.Median), open.Spread(),
			lab.FormatNumber(rs.Median(caseColdOpen, "time")/1e3), dbName, lab.FormatNumber(rs.Median(caseUnwrap, "time")/1e3)))
		sec.Headlines = append(sec.Headlines, seal, open)
	}
	if kb, ok := rs.Get("login/key-bearing-vs-plain", "ratio"); ok {
		priv, _ := rs.Get("login/private-vs-plain", "ratio")
		sec.Answer = append(sec.Answer, fmt.Sprintf("A log-in that also yields a private user's key costs %sx a plain one (p05–p95 %s): the same Argon2id call with a 64-byte tag; unlocking the key into the session brings it to %sx (%s).",
			lab.FormatNumber(kb.Median), kb.Spread(), lab.FormatNumber(priv.Median), priv.Spread()))
		sec.Headlines = append(sec.Headlines, kb, priv)
	}
	var sizes []int
	for _, r := range rs.Where(func(r lab.Result) bool { return r.Metric == "time" && r.Unit == "ms" }) {
		sizes = append(sizes, int(lab.Num(r.Params, "values")))
	}
	if len(sizes) > 0 {
		lo, hi := rs.Median(forgetCase(sizes[0]), "time"), rs.Median(forgetCase(sizes[len(sizes)-1]), "time")
		sec.Answer = append(sec.Answer, fmt.Sprintf("Forgetting a user takes %s ms with %s values and %s ms with %s: one key deleted and a tombstone written, whatever the number of values.",
			lab.FormatNumber(lo), lab.FormatNumber(float64(sizes[0])), lab.FormatNumber(hi), lab.FormatNumber(float64(sizes[len(sizes)-1]))))
	}
	if one := rs.Median(resealCase(1), "rows_per_second"); !math.IsNaN(one) {
		best, bw := one, 1
		for _, w := range Workers {
			if v := rs.Median(resealCase(w), "rows_per_second"); v > best {
				best, bw = v, w
			}
		}
		r, _ := rs.Get(resealCase(1), "rows_per_second")
		sec.Answer = append(sec.Answer, fmt.Sprintf("Re-wrapping %s users' keys after a keyring rotation runs at %s keys/s with one worker and %s with %d, on %s, resumable.",
			lab.FormatNumber(lab.Num(r.Params, "keys")), lab.FormatNumber(one), lab.FormatNumber(best), bw, dbName))
	}
	if c, err := resealChart(rs); err != nil {
		return sec, err
	} else if c != "" {
		sec.Charts = append(sec.Charts, c)
	}
	sec.Tables = append(sec.Tables, costTable(rs, sizes, dbName))
	sec.FieldReport = "The chat field report asked whether operators can read users' chats; it measured encryption under one application key. Keys per user, erasure by key deletion and user-held keys are ward's own answer to the questions users ask next."
	return sec, nil
}

func costTable(rs lab.Results, sizes []int, db string) lab.Table {
	t := lab.Table{Caption: "What keys per user cost here: median (p05–p95)", Head: []string{"what", "time", "ratio"}}
	row := func(what, cas, metric, unit string, scale float64, ratio string) {
		r, ok := rs.Get(cas, metric)
		if !ok {
			return
		}
		v := lab.FormatNumber(r.Median/scale) + " " + unit
		if r.N > 1 {
			v += " (" + lab.FormatNumber(r.P05/scale) + "–" + lab.FormatNumber(r.P95/scale) + ")"
		}
		ratioText := ""
		if q, ok := rs.Get(ratio, "ratio"); ok {
			ratioText = lab.FormatNumber(q.Median) + "x (" + q.Spread() + ")"
		}
		t.Rows = append(t.Rows, []string{what, v, ratioText})
	}
	row("seal 500 B, keyring key", valueCase("seal", "keyring"), "time", "ns", 1, "")
	row("seal 500 B, user's key (cached)", valueCase("seal", "subject-warm"), "time", "ns", 1, ratioCase("seal"))
	row("open 500 B, keyring key", valueCase("open", "keyring"), "time", "ns", 1, "")
	row("open 500 B, user's key (cached)", valueCase("open", "subject-warm"), "time", "ns", 1, ratioCase("open"))
	row("unwrap one user's key", caseUnwrap, "time", "µs", 1e3, "")
	row("open 500 B, user's key not cached ("+db+")", caseColdOpen, "time", "µs", 1e3, "")
	row("log-in, plain hash", caseLoginPlain, "time", "ms", 1e6, "")
	row("log-in, key-bearing hash", caseLoginKey, "time", "ms", 1e6, "login/key-bearing-vs-plain")
	row("log-in, private user (unlock + session copy)", caseLoginPriv, "time", "ms", 1e6, "login/private-vs-plain")
	for _, n := range sizes {
		row(fmt.Sprintf("forget a user with %s values (%s)", lab.FormatNumber(float64(n)), db), forgetCase(n), "time", "ms", 1, "")
	}
	for _, w := range Workers {
		if r, ok := rs.Get(resealCase(w), "rows_per_second"); ok {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("re-wrap %s keys, %d workers (%s)", lab.FormatNumber(lab.Num(r.Params, "keys")), w, db), lab.FormatNumber(r.Median) + " keys/s", ""})
		}
	}
	return t
}

func resealChart(rs lab.Results) (template.HTML, error) {
	var pts plotter.XYs
	for _, w := range Workers {
		if v := rs.Median(resealCase(w), "rows_per_second"); !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: float64(w), Y: v})
		}
	}
	if len(pts) == 0 {
		return "", nil
	}
	return chart.Line("Users' keys re-wrapped per second", chart.Axes{X: "workers", Y: "keys/s"}, []chart.Series{{Name: "ward subject reseal", Points: pts}})
}
