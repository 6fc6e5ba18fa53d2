// Package handshakelab is the lab scenario "handshake", which reproduces
// and extends the field report on hybrid post-quantum key exchange:
// X25519, ML-KEM, hybrid and ML-DSA-signed handshakes over real TCP on
// loopback, under the report's sleep-before-send delay model and a link
// model (toxiproxy), with both ML-KEM/ML-DSA backends, and the report's
// own Python X25519 benchmark run beside them.
package handshakelab

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/pq/handshake"
)

// Scenario is the "handshake" lab scenario.
type Scenario struct {
	// Configs overrides the matrix (nil: Configs()).
	Configs []Config
}

var _ lab.Scenario = Scenario{}

// Name returns "handshake".
func (Scenario) Name() string { return "handshake" }

// Title names the topic.
func (Scenario) Title() string { return "Post-quantum key exchange: handshakes in time and bytes" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What do X25519, ML-KEM, hybrid and ML-DSA-signed handshakes cost in time and bytes, and how does network delay change the answer?"
}

// RunsCSV is the per-run file written into the results folder, with the
// field report's columns first.
const RunsCSV = "handshake_runs.csv"

// Delay models.
const (
	// SleepModel sleeps the one-way delay before every write, as the field
	// report's benchmark did: every write costs a full delay.
	SleepModel = "sleep"
	// LinkModel delays bytes in flight through a toxiproxy link, so
	// writes pipeline as on a real network.
	LinkModel = "link"
)

// Delays are the one-way delays measured: the report's three.
var Delays = []time.Duration{0, 20 * time.Millisecond, 75 * time.Millisecond}

// Config is one measured configuration; its name is the case key the
// scenario records and its section looks up.
type Config struct {
	Suite     handshake.Suite
	Backend   handshake.Backend
	Layout    Layout
	PinnedKey bool   // the client already has the key (not sent)
	Model     string // SleepModel or LinkModel
	Delay     time.Duration
	Jitter    time.Duration
	Kbit      int64
}

func (c Config) name() string {
	s := fmt.Sprintf("%v/%v/%s/%dms", c.Suite, c.Backend, c.Model, c.Delay.Milliseconds())
	if c.Suite.Sig != handshake.SigNone {
		s += "/" + c.Layout.String()
		if c.PinnedKey {
			s += "/pinned-key"
		}
	}
	if c.Kbit > 0 {
		s += fmt.Sprintf("/%dkbit", c.Kbit)
	}
	if c.Jitter > 0 {
		s += fmt.Sprintf("/jitter%dms", c.Jitter.Milliseconds())
	}
	return s
}

func (c Config) params() map[string]any {
	return map[string]any{"suite": c.Suite.String(), "mode": c.Suite.Family(), "mechanism": c.Suite.Mechanism(), "backend": c.Backend.String(),
		"layout": c.Layout.String(), "pinned_key": c.PinnedKey, "delay_model": c.Model, "delay_ms": c.Delay.Milliseconds(),
		"jitter_ms": c.Jitter.Milliseconds(), "bandwidth_kbit": c.Kbit}
}

// shape is a suite with the layouts it is measured in.
type shape struct {
	suite   handshake.Suite
	layouts []Layout
	pinned  bool
}

// shapes are the field report's ten mechanisms, the signed ones in both
// layouts, and one with the key pinned (not sent).
func shapes() []shape {
	b := []Layout{Bundled}
	out := []shape{{handshake.Suite{KEX: handshake.X25519}, b, false}}
	for _, k := range []handshake.KEX{handshake.MLKEM512, handshake.MLKEM768, handshake.MLKEM1024,
		handshake.X25519MLKEM512, handshake.X25519MLKEM768, handshake.X25519MLKEM1024} {
		out = append(out, shape{handshake.Suite{KEX: k}, b, false})
	}
	for _, k := range []handshake.KEX{handshake.MLKEM512, handshake.MLKEM768, handshake.MLKEM1024} {
		out = append(out, shape{handshake.Suite{KEX: k, Sig: handshake.MLDSA65}, []Layout{Bundled, Separate}, false})
	}
	return append(out, shape{handshake.Suite{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}, b, true})
}

// Configs returns the scenario's matrix: every shape under both delay
// models at the report's delays with the standard library; the circl
// backend at 0 ms, where only the cryptography differs; and, where bytes
// turn into time, bandwidth-limited and jittery links.
func Configs() []Config {
	var out []Config
	for _, s := range shapes() {
		for _, model := range []string{SleepModel, LinkModel} {
			for _, d := range Delays {
				for _, l := range s.layouts {
					out = append(out, Config{Suite: s.suite, Backend: handshake.Stdlib, Layout: l, PinnedKey: s.pinned, Model: model, Delay: d})
					if d == 0 {
						out = append(out, Config{Suite: s.suite, Backend: handshake.Circl, Layout: l, PinnedKey: s.pinned, Model: model})
					}
				}
			}
		}
	}
	for _, s := range []handshake.Suite{{KEX: handshake.X25519}, {KEX: handshake.X25519MLKEM768}, {KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}} {
		for _, kbit := range []int64{1000, 10000} {
			out = append(out, Config{Suite: s, Model: LinkModel, Delay: 20 * time.Millisecond, Kbit: kbit})
		}
		out = append(out, Config{Suite: s, Model: LinkModel, Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond})
	}
	return out
}

// Runs per configuration: the field report's 60 in the full profile; the
// quick profile keeps enough for a median with a p05–p95 spread.
const (
	FullRuns  = 60
	QuickRuns = 11
)

// Run measures every configuration, the loopback floor, the derived
// ratios and the field report's own Python benchmark.
func (sc Scenario) Run(ctx context.Context, env *lab.Env) error {
	runs := FullRuns
	if env.Quick {
		runs = QuickRuns
	}
	rtt, err := loopbackFloor(env, runs*20)
	if err != nil {
		return err
	}
	keys, err := signingKeys()
	if err != nil {
		return err
	}
	w, closeCSV, err := runsWriter(env)
	if err != nil {
		return err
	}
	defer closeCSV()
	cfgs := sc.Configs
	if cfgs == nil {
		cfgs = Configs()
	}
	all, err := interleave(ctx, cfgs, keys, runs, env.Progress)
	if err != nil {
		return err
	}
	times, cpu := map[string][]float64{}, map[string][]float64{}
	for i, c := range cfgs {
		rs := all[i]
		times[c.name()], cpu[c.name()] = record(env, c, rs)
		if c.atFloor() {
			recordFloor(env, c, rs, rtt)
		}
		if w != nil {
			writeRuns(w, c, rs)
		}
	}
	for _, r := range ratios() {
		by, what := times, "elapsed"
		if r.byCPU {
			by, what = cpu, "the process's CPU time"
		}
		if num, den := by[r.num.name()], by[r.den.name()]; len(num) > 0 && len(den) > 0 {
			env.Record(lab.PairedRatio("handshake", r.name, map[string]any{"numerator": r.num.name(), "denominator": r.den.name(), "clock": what}, "ratio", num, den,
				r.note+", per interleaved round ("+what+")"))
		}
	}
	pythonPeer(ctx, env, runs, times)
	recordFieldReport(env)
	return nil
}

func signingKeys() (map[handshake.Sig]*handshake.SigningKey, error) {
	keys := map[handshake.Sig]*handshake.SigningKey{}
	for _, s := range []handshake.Sig{handshake.MLDSA44, handshake.MLDSA65, handshake.MLDSA87} {
		k, err := handshake.GenerateSigningKey(s)
		if err != nil {
			return nil, err
		}
		keys[s] = k
	}
	return keys, nil
}

// record records a configuration's results and returns its handshake
// times and the process's CPU time per handshake, in ms.
func record(env *lab.Env, c Config, rs []run) (elapsed, cpu []float64) {
	ms := func(f func(run) time.Duration) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = lab.Milliseconds(f(r))
		}
		return out
	}
	num := func(f func(run) int) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = float64(f(r))
		}
		return out
	}
	p, n := c.params(), c.name()
	ht := ms(func(r run) time.Duration { return r.confirmed })
	ct := ms(func(r run) time.Duration { return r.cpu })
	env.Record(lab.FromSamples("handshake", n, p, "handshake_time", "ms", ht),
		lab.FromSamples("handshake", n, p, "handshake_cpu", "ms", ct),
		lab.FromSamples("handshake", n, p, "connect_time", "ms", ms(func(r run) time.Duration { return r.connect })),
		lab.FromSamples("handshake", n, p, "client_crypto", "ms", ms(func(r run) time.Duration { return r.clientCrypto })),
		lab.FromSamples("handshake", n, p, "server_crypto", "ms", ms(func(r run) time.Duration { return r.serverCrypto })),
		lab.FromSamples("handshake", n, p, "bytes_up", "B", num(func(r run) int { return r.up })),
		lab.FromSamples("handshake", n, p, "bytes_down", "B", num(func(r run) int { return r.down })),
		lab.FromSamples("handshake", n, p, "wire_bytes", "B", num(func(r run) int { return r.up + r.down })),
		lab.FromSamples("handshake", n, p, "server_writes", "writes", num(func(r run) int { return r.writes })))
	return ht, ct
}

// runsWriter opens the per-run CSV in the results folder, if there is one.
func runsWriter(env *lab.Env) (*csv.Writer, func(), error) {
	if env.OutDir == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(filepath.Join(env.OutDir, RunsCSV))
	if err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"mode", "mechanism", "sim_latency_ms", "handshake_time_ms", "wire_bytes",
		"suite", "backend", "layout", "pinned_key", "delay_model", "bandwidth_kbit", "jitter_ms", "run",
		"connect_ms", "client_crypto_ms", "server_crypto_ms", "bytes_up", "bytes_down", "flights", "server_writes", "key_match"})
	return w, func() { w.Flush(); f.Close() }, nil
}

func writeRuns(w *csv.Writer, c Config, rs []run) {
	f3 := func(d time.Duration) string { return strconv.FormatFloat(lab.Milliseconds(d), 'f', 3, 64) }
	for j, r := range rs {
		w.Write([]string{c.Suite.Family(), c.Suite.Mechanism(), strconv.FormatInt(c.Delay.Milliseconds(), 10), f3(r.confirmed), strconv.Itoa(r.up + r.down),
			c.Suite.String(), c.Backend.String(), c.Layout.String(), strconv.FormatBool(c.PinnedKey), c.Model,
			strconv.FormatInt(c.Kbit, 10), strconv.FormatInt(c.Jitter.Milliseconds(), 10), strconv.Itoa(j + 1),
			f3(r.connect), f3(r.clientCrypto), f3(r.serverCrypto), strconv.Itoa(r.up), strconv.Itoa(r.down),
			strconv.Itoa(r.flights), strconv.Itoa(r.writes), "true"})
	}
}

// atFloor reports whether a configuration is one whose time is compared
// with its floor: no added delay, ward's bundled flight, key sent.
func (c Config) atFloor() bool {
	return c.Delay == 0 && c.Model == SleepModel && c.Layout == Bundled && !c.PinnedKey && c.Kbit == 0 && c.Jitter == 0
}

// recordFloor records, per run, the suite's floor on this machine — the
// cryptography on the critical path (the client's and the server's, as
// each side measured it) plus one loopback round trip — and the run's
// time to a confirmed key over it. The server's time counts whole,
// including its check of the client's finished message, which comes after
// the client is done: the floor is slightly high, the ratio slightly low.
func recordFloor(env *lab.Env, c Config, rs []run, rtt time.Duration) {
	floor := make([]float64, len(rs))
	ratio := make([]float64, len(rs))
	for i, r := range rs {
		f := r.clientCrypto + r.serverCrypto + rtt
		floor[i] = lab.Milliseconds(f)
		ratio[i] = float64(r.confirmed) / float64(f)
	}
	p := c.params()
	fl := lab.FromSamples("handshake", c.name(), p, "floor", "ms", floor)
	fl.Note = "client and server cryptography of the run plus the median loopback round trip"
	rt := lab.FromSamples("handshake", c.name(), p, "floor_ratio", "x", ratio)
	rt.Note = "time to a confirmed key over the run's floor (same backend)"
	env.Record(fl, rt)
}
