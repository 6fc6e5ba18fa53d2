package handshakelab

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/pq/handshake"
)

// TestScenarioModels runs a few configurations end to end and checks the
// delay models: under the sleep model every write costs one delay, so the
// separate layout (4 writes to a confirmed key) takes at least 4 delays
// and the bundled one 2; the link model pipelines writes.
func TestScenarioModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs delayed handshakes")
	}
	d := 20 * time.Millisecond
	signed := handshake.Suite{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}
	cfgs := []Config{
		{Suite: handshake.Suite{KEX: handshake.X25519}, Model: SleepModel},
		{Suite: handshake.Suite{KEX: handshake.X25519MLKEM768}, Model: SleepModel, Delay: d},
		{Suite: signed, Layout: Bundled, Model: SleepModel, Delay: d},
		{Suite: signed, Layout: Separate, Model: SleepModel, Delay: d},
		{Suite: signed, Layout: Separate, Model: "link", Delay: d},
		{Suite: signed, Backend: handshake.Circl, Model: "link", Delay: d, Kbit: 1000},
		{Suite: handshake.Suite{KEX: handshake.MLKEM768}, Model: SleepModel},
		{Suite: handshake.Suite{KEX: handshake.MLKEM768}, Backend: handshake.Circl, Model: SleepModel},
	}
	env := lab.NewEnv("handshake", true, nil, nil)
	env.OutDir = t.TempDir()
	if err := (Scenario{Configs: cfgs}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	med := map[string]float64{}
	for _, r := range env.Results() {
		if r.Metric == "handshake_time" && r.Source == "" {
			med[r.Case] = r.Median
		}
		if r.Metric == "wire_bytes" && r.Source == "" && r.Params["suite"] == "mlkem768+mldsa65" && r.Median != 7646 {
			t.Errorf("%s: %v bytes", r.Case, r.Median)
		}
	}
	ms := float64(d.Milliseconds())
	if v := med["mlkem768+mldsa65/stdlib/sleep/20ms/separate"]; v < 4*ms {
		t.Errorf("separate under the sleep model: %v ms, want at least %v", v, 4*ms)
	}
	// Only lower bounds, which the injected delays set: how close to one
	// round trip the bundled flight and the link model come is the lab's
	// to measure (its separate-over-bundled ratios), not a test's to
	// assert on a loaded machine.
	if v := med["mlkem768+mldsa65/stdlib/sleep/20ms/bundled"]; v < 2*ms {
		t.Errorf("bundled under the sleep model: %v ms, want at least one round trip (%v)", v, 2*ms)
	}
	if v := med["mlkem768+mldsa65/stdlib/link/20ms/separate"]; v < 2*ms {
		t.Errorf("separate over a link: %v ms, want at least one round trip (%v)", v, 2*ms)
	}
	// 7.6 kB at 1 Mbit/s adds about 50 ms.
	if v := med["mlkem768+mldsa65/circl/link/20ms/bundled/1000kbit"]; v < 2*ms+40 {
		t.Errorf("1 Mbit/s: %v ms", v)
	}
	// The configurations ran interleaved, round by round: the ratio of two
	// of them pairs run i with run i (one per round, not every pair of
	// runs), and each handshake's CPU time was read.
	rs := lab.Results(env.Results())
	if r, ok := rs.Get(separateVsBundled(768, SleepModel), "ratio"); !ok || r.N != QuickRuns || r.Params["clock"] != "elapsed" {
		t.Errorf("separate over bundled: %+v", r)
	}
	// Backends at 0 ms differ by their computing alone: compared by CPU.
	if r, ok := rs.Get(backendRatio(cfgs[6]), "ratio"); !ok || r.N != QuickRuns || r.Params["clock"] != "the process's CPU time" {
		t.Errorf("stdlib over circl: %+v", r)
	}
	for _, c := range cfgs {
		if r, ok := rs.Get(c.name(), "handshake_cpu"); !ok || r.N != QuickRuns || !(r.Median > 0) {
			t.Errorf("%s CPU: %+v", c.name(), r)
		}
	}
	checkPeer(t, env.Results())
	sec, err := (Scenario{}).Report(env.Results())
	if err != nil || len(sec.Tables) != 3 || len(sec.Answer) < 2 {
		t.Fatalf("section: %v, %d tables, %d answers", err, len(sec.Tables), len(sec.Answer))
	}
	// The 0 ms x25519 configuration is set against its floor: a ratio of
	// at least 1 (nothing beats its own cryptography and round trip); each
	// of the three 0 ms configurations has its row.
	x := Config{Suite: handshake.Suite{KEX: handshake.X25519}, Model: SleepModel}
	if r, ok := lab.Results(env.Results()).Get(x.name(), "floor_ratio"); !ok || r.Median < 1 || len(sec.Tables[2].Rows) != 3 {
		t.Errorf("floor ratio of %s: %+v %v, table %v", x.name(), r, ok, sec.Tables[2].Rows)
	}
	for _, h := range sec.Headlines {
		if h.Case == "" {
			t.Errorf("an empty headline: %+v", sec.Headlines)
		}
	}
	f, err := os.Open(filepath.Join(env.OutDir, RunsCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 1+QuickRuns*len(cfgs) || rows[0][0] != "mode" || rows[0][4] != "wire_bytes" {
		t.Fatalf("runs CSV: %d rows, %v", len(rows), err)
	}
}

// checkPeer: the report's Python benchmark ran and was compared with
// ward, or the results say it could not run here (and how to install it).
func checkPeer(t *testing.T, rs lab.Results) {
	t.Helper()
	if u, ok := rs.Get(pythonCase(0), lab.MetricUnavailable); ok {
		t.Logf("python peer not run: %s", u.Note)
		return
	}
	py, ok := rs.Get(pythonCase(0), "handshake_time")
	r, ok2 := rs.Get(pythonRatio(0), "ratio")
	if !ok || !ok2 || py.Source != lab.SourcePeer || py.N != QuickRuns || r.Median <= 0 {
		t.Fatalf("python peer: %+v %+v", py, r)
	}
}
