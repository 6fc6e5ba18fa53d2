package migratelab

import (
	"fmt"
	"html/template"
	"math"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
)

// Report builds the section: rows per second by job, workers and batch
// size, the pgcrypto references, CPU use, and the application's latency.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	db, ok := rs.Get(dbCase, "rows")
	if !ok {
		return sec, nil
	}
	c, err := workersChart(rs)
	if err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, c)
	t := lab.Table{Caption: fmt.Sprintf("Rows per second on %s, %s rows of chat-sized text: overall, median of windows (p05–p95), CPUs busy, ward's own CPU", lab.Str(db.Params, "database"), lab.FormatNumber(db.Median)),
		Head: jobHead}
	var keys []jobKey
	for _, w := range Workers {
		keys = append(keys, jobKey{"encrypt-existing", w, 500})
	}
	for _, b := range BatchSizes {
		keys = append(keys, jobKey{"encrypt-existing", 2, b})
	}
	for _, w := range Workers {
		keys = append(keys, jobKey{"rotate", w, 500})
	}
	for _, k := range keys {
		t.Rows = append(t.Rows, jobRow(rs, k.name(), k))
	}
	if r, ok := rs.Get(dbUpdate, "rows_per_second"); ok && r.Source == lab.SourceReference {
		t.Rows = append(t.Rows, []string{"the database writing the job's output (its floor)", "–", fmt.Sprint(floorBatch), lab.FormatNumber(r.Median), "–", "–", "–"})
	}
	for _, ref := range []string{pgpSym, encryptIV} {
		if r, ok := rs.Get(ref, "rows_per_second"); ok {
			t.Rows = append(t.Rows, []string{ref + " (one UPDATE)", "–", "–", lab.FormatNumber(r.Median), "–", "–", "–"})
		}
	}
	sec.Tables = append(sec.Tables, t)
	migrateAnswers(&sec, rs)
	if mt, ok := mariaTable(rs); ok {
		sec.Tables = append(sec.Tables, mt)
		sec.Answer = append(sec.Answer, mariaAnswer(rs))
	}
	sec.FieldReport = "The chat field report encrypted new messages only; it did not say how to encrypt the messages it already held. This section is ward's own question."
	return sec, nil
}

func migrateAnswers(sec *lab.Section, rs lab.Results) {
	one := rs.Median(jobKey{"encrypt-existing", 1, 500}.name(), "rows_per_second")
	four := rs.Median(jobKey{"encrypt-existing", 4, 500}.name(), "rows_per_second")
	if !math.IsNaN(one) {
		line := fmt.Sprintf("Encrypting existing plaintext runs at %s rows/s with one worker and %s with four (%sx), each batch one transaction with compare-and-swap, resumable after a kill.",
			lab.FormatNumber(one), lab.FormatNumber(four), lab.FormatNumber(four/one))
		if cpu := rs.Median(jobKey{"encrypt-existing", 4, 500}.name(), "cpu_busy"); cpu > 85 {
			line += fmt.Sprintf(" At four workers the CPUs were %s %% busy: the curve flattens on CPU (ward's sealing and the database's writes share the cores).", lab.FormatNumber(cpu))
		}
		sec.Answer = append(sec.Answer, line)
		sec.Headlines = append(sec.Headlines, lab.Derived("migrate", "encrypt-existing/4-vs-1-workers", nil, "ratio", "x", four/one, "rows/s at 4 workers over 1"))
	}
	if r, ok := rs.Get(dbUpdate, "rows_per_second"); ok && r.Source == lab.SourceReference && !math.IsNaN(one) {
		sec.Answer = append(sec.Answer, fmt.Sprintf("The job's floor: PostgreSQL writing the job's own output back over the plaintext, %d rows per UPDATE and transaction with nothing done in the client, runs at %s rows/s; ward's one-worker job, which also reads each row, seals it and compares before it writes, reaches %s %% of that, spending %s ms of its own CPU per 1,000 rows.",
			floorBatch, lab.FormatNumber(r.Median), lab.FormatNumber(one/r.Median*100), lab.FormatNumber(rs.Median(jobKey{"encrypt-existing", 1, 500}.name(), "cpu_per_1000_rows"))))
	}
	for _, ref := range []string{encryptIV, pgpSym} {
		if r, ok := rs.Get(ref, "rows_per_second"); ok && !math.IsNaN(one) {
			sec.Answer = append(sec.Answer, fmt.Sprintf("%s updates the table at %s rows/s in one statement; ward at one worker reaches %s %% of it (and is authenticated, bound to each row, online and resumable; the SQL reference holds one long transaction and sends its key to the database).",
				ref, lab.FormatNumber(r.Median), lab.FormatNumber(one/r.Median*100)))
		}
	}
	if r, ok := rs.Get(appRatio, "p95_ratio"); ok {
		a, _ := rs.Get(appAlone, "latency")
		b, _ := rs.Get(appDuring, "latency")
		line := fmt.Sprintf("A running application's p95 latency: %s ms alone, %s ms while a job limited to a quarter of one worker's rate ran: %sx.",
			lab.FormatNumber(a.P95), lab.FormatNumber(b.P95), lab.FormatNumber(r.Median))
		if bn, ok := rs.Get(appBottleneck, "p95_ratio"); ok {
			line += " Limiting resource: " + bn.Note + "."
		}
		sec.Answer = append(sec.Answer, line)
		sec.Headlines = append(sec.Headlines, r)
	}
}

func workersChart(rs lab.Results) (template.HTML, error) {
	var ss []chart.Series
	for _, job := range []string{"encrypt-existing", "rotate"} {
		var pts plotter.XYs
		for _, w := range Workers {
			if v := rs.Median(jobKey{job, w, 500}.name(), "rows_per_second"); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(w), Y: v})
			}
		}
		ss = append(ss, chart.Series{Name: "ward " + job, Points: pts})
	}
	for _, ref := range []string{encryptIV, pgpSym} {
		if v := rs.Median(ref, "rows_per_second"); !math.IsNaN(v) {
			ss = append(ss, chart.Series{Name: ref + " (one UPDATE)", Dashed: true,
				Points: plotter.XYs{{X: float64(Workers[0]), Y: v}, {X: float64(Workers[len(Workers)-1]), Y: v}}})
		}
	}
	return chart.Line("Rows per second by workers", chart.Axes{X: "workers", Y: "rows/s"}, ss)
}

// mariaTable is the MariaDB run's table: the jobs, and AES_ENCRYPT.
func mariaTable(rs lab.Results) (lab.Table, bool) {
	db, ok := rs.Get(mariaCase, "rows")
	if !ok {
		return lab.Table{}, false
	}
	t := lab.Table{Caption: fmt.Sprintf("Rows per second on MariaDB, %s rows of chat-sized text: overall, median of windows (p05–p95), CPUs busy, ward's own CPU", lab.FormatNumber(db.Median)),
		Head: jobHead}
	for _, k := range []jobKey{{"encrypt-existing", 1, 500}, {"encrypt-existing", Workers[len(Workers)-1], 500}, {"rotate", 1, 500}} {
		t.Rows = append(t.Rows, jobRow(rs, mariaPrefix+k.name(), k))
	}
	if r, ok := rs.Get(aesEncrypt, "rows_per_second"); ok {
		t.Rows = append(t.Rows, []string{"AES_ENCRYPT, AES-128-ECB (one UPDATE)", "–", "–", lab.FormatNumber(r.Median), "–", "–", "–"})
	}
	return t, true
}

// mariaAnswer compares ward's one-worker job with AES_ENCRYPT on MariaDB.
func mariaAnswer(rs lab.Results) string {
	one := rs.Median(mariaPrefix+jobKey{"encrypt-existing", 1, 500}.name(), "rows_per_second")
	line := fmt.Sprintf("On MariaDB ward encrypts existing plaintext at %s rows/s with one worker.", lab.FormatNumber(one))
	if r, ok := rs.Get(aesEncrypt, "rows_per_second"); ok {
		line += fmt.Sprintf(" MariaDB's AES_ENCRYPT (AES-128 in ECB mode: no IV, equal messages give equal ciphertexts, nothing authenticated) updates the table at %s rows/s in one statement; ward reaches %s %% of it.",
			lab.FormatNumber(r.Median), lab.FormatNumber(one/r.Median*100))
	}
	return line
}

// jobHead heads the jobs' tables.
var jobHead = []string{"job", "workers", "batch", "rows/s", "windows", "CPU busy", "ward's CPU per 1,000 rows"}

// jobRow is a job's row of a jobs' table: rows/s overall and by window,
// the CPUs' busy share, and the CPU time ward's own process spent.
func jobRow(rs lab.Results, name string, k jobKey) []string {
	win, _ := rs.Get(name, "window_rows_per_second")
	own := "–"
	if r, ok := rs.Get(name, "cpu_per_1000_rows"); ok {
		own = lab.FormatNumber(r.Median) + " ms"
	}
	return []string{k.job, fmt.Sprint(k.workers), fmt.Sprint(k.batch), lab.FormatNumber(rs.Median(name, "rows_per_second")),
		lab.FormatNumber(win.Median) + " (" + win.Spread() + ")", lab.FormatNumber(rs.Median(name, "cpu_busy")) + " %", own}
}
