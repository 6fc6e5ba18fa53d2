// Package handshakelab is the lab scenario "handshake", which reproduces and
// extends seed 003: X25519, ML-KEM, hybrid and ML-DSA-signed handshakes
// over real TCP on loopback, under the seed's sleep-before-send delay model
// and a link model (toxiproxy), with both ML-KEM/ML-DSA backends.
package handshakelab

import (
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wardlab/ward/handshake"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
)

// Scenario is the "handshake" lab scenario.
type Scenario struct {
	// Configs overrides the matrix (nil: Configs()).
	Configs []Config
}

var _ lab.Scenario = Scenario{}

// Name returns "handshake".
func (Scenario) Name() string { return "handshake" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 003: X25519/ML-KEM/hybrid/ML-DSA-signed handshakes over TCP at 0/20/75 ms, seed and link delay models, two backends"
}

// RunsCSV is the per-run file written into the results folder, with the
// seed's columns first.
const RunsCSV = "handshake_runs.csv"

// Config is one measured configuration.
type Config struct {
	Suite     handshake.Suite
	Backend   handshake.Backend
	Layout    handshake.Layout
	PinnedKey bool   // the client already has the key (not sent)
	Model     string // "seed" or "link"
	Delay     time.Duration
	Jitter    time.Duration
	Kbit      int64
}

// Mode and Mechanism name a suite as the seed's CSV did.
func (c Config) Mode() string {
	switch {
	case c.Suite.Sig != handshake.SigNone:
		return "signed"
	case c.Suite.KEX == handshake.X25519:
		return "x25519"
	case c.Suite.KEX >= handshake.X25519MLKEM512:
		return "hybrid"
	}
	return "mlkem"
}

// Mechanism names the primitives, for example "X25519+ML-KEM-768".
func (c Config) Mechanism() string {
	k := c.Suite.KEX
	lvl := map[handshake.KEX]string{handshake.MLKEM512: "512", handshake.MLKEM768: "768", handshake.MLKEM1024: "1024",
		handshake.X25519MLKEM512: "512", handshake.X25519MLKEM768: "768", handshake.X25519MLKEM1024: "1024"}[k]
	m := "ML-KEM-" + lvl
	switch {
	case k == handshake.X25519:
		m = "X25519"
	case k >= handshake.X25519MLKEM512:
		m = "X25519+ML-KEM-" + lvl
	}
	if c.Suite.Sig != handshake.SigNone {
		m += "+ML-DSA-" + map[handshake.Sig]string{handshake.MLDSA44: "44", handshake.MLDSA65: "65", handshake.MLDSA87: "87"}[c.Suite.Sig]
	}
	return m
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
	return map[string]any{"suite": c.Suite.String(), "mode": c.Mode(), "mechanism": c.Mechanism(), "backend": c.Backend.String(),
		"layout": c.Layout.String(), "pinned_key": c.PinnedKey, "delay_model": c.Model, "delay_ms": c.Delay.Milliseconds(),
		"jitter_ms": c.Jitter.Milliseconds(), "bandwidth_kbit": c.Kbit}
}

// Configs returns the scenario's matrix.
func Configs() []Config {
	var suites []struct {
		s       handshake.Suite
		layouts []handshake.Layout
		pinned  bool
	}
	add := func(s handshake.Suite, pinned bool, l ...handshake.Layout) {
		suites = append(suites, struct {
			s       handshake.Suite
			layouts []handshake.Layout
			pinned  bool
		}{s, l, pinned})
	}
	add(handshake.Suite{KEX: handshake.X25519}, false, handshake.Bundled)
	for _, k := range []handshake.KEX{handshake.MLKEM512, handshake.MLKEM768, handshake.MLKEM1024} {
		add(handshake.Suite{KEX: k}, false, handshake.Bundled)
	}
	for _, k := range []handshake.KEX{handshake.X25519MLKEM512, handshake.X25519MLKEM768, handshake.X25519MLKEM1024} {
		add(handshake.Suite{KEX: k}, false, handshake.Bundled)
	}
	for _, k := range []handshake.KEX{handshake.MLKEM512, handshake.MLKEM768, handshake.MLKEM1024} {
		add(handshake.Suite{KEX: k, Sig: handshake.MLDSA65}, false, handshake.Bundled, handshake.Separate)
	}
	add(handshake.Suite{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}, true, handshake.Bundled)
	var out []Config
	for _, s := range suites {
		for _, b := range []handshake.Backend{handshake.Stdlib, handshake.Circl} {
			for _, model := range []string{"seed", "link"} {
				for _, d := range []time.Duration{0, 20 * time.Millisecond, 75 * time.Millisecond} {
					for _, l := range s.layouts {
						out = append(out, Config{Suite: s.s, Backend: b, Layout: l, PinnedKey: s.pinned, Model: model, Delay: d})
					}
				}
			}
		}
	}
	// Where bytes turn into time: bandwidth-limited and jittery links.
	for _, s := range []handshake.Suite{{KEX: handshake.X25519}, {KEX: handshake.X25519MLKEM768}, {KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}} {
		for _, kbit := range []int64{1000, 10000} {
			out = append(out, Config{Suite: s, Model: "link", Delay: 20 * time.Millisecond, Kbit: kbit})
		}
		out = append(out, Config{Suite: s, Model: "link", Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond})
	}
	return out
}

// run is one measured handshake.
type run struct {
	connect, confirmed         time.Duration
	clientCrypto, serverCrypto time.Duration
	up, down, writes, flights  int
}

// Run measures every configuration.
func (sc Scenario) Run(ctx context.Context, env *lab.Env) error {
	runs := 60
	if env.Quick {
		runs = 3
	}
	if err := loopbackFloor(env, runs*20); err != nil {
		return err
	}
	keys := map[handshake.Sig]*handshake.SigningKey{}
	for _, s := range []handshake.Sig{handshake.MLDSA44, handshake.MLDSA65, handshake.MLDSA87} {
		k, err := handshake.GenerateSigningKey(s)
		if err != nil {
			return err
		}
		keys[s] = k
	}
	var w *csv.Writer
	if env.OutDir != "" {
		f, err := os.Create(filepath.Join(env.OutDir, RunsCSV))
		if err != nil {
			return err
		}
		defer f.Close()
		w = csv.NewWriter(f)
		defer w.Flush()
		w.Write([]string{"mode", "mechanism", "sim_latency_ms", "handshake_time_ms", "wire_bytes",
			"suite", "backend", "layout", "pinned_key", "delay_model", "bandwidth_kbit", "jitter_ms", "run",
			"connect_ms", "client_crypto_ms", "server_crypto_ms", "bytes_up", "bytes_down", "flights", "server_writes", "key_match"})
	}
	cfgs := sc.Configs
	if cfgs == nil {
		cfgs = Configs()
	}
	medians := map[string]float64{}
	for i, c := range cfgs {
		rs, err := measure(ctx, c, keys, runs)
		if err != nil {
			return fmt.Errorf("handshake %s: %w", c.name(), err)
		}
		ms := func(f func(run) time.Duration) []float64 {
			out := make([]float64, len(rs))
			for i, r := range rs {
				out[i] = float64(f(r).Microseconds()) / 1000
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
		p := c.params()
		ht := lab.FromSamples("handshake", c.name(), p, "handshake_time", "ms", ms(func(r run) time.Duration { return r.confirmed }))
		medians[c.name()] = ht.Median
		env.Record(ht,
			lab.FromSamples("handshake", c.name(), p, "connect_time", "ms", ms(func(r run) time.Duration { return r.connect })),
			lab.FromSamples("handshake", c.name(), p, "client_crypto", "ms", ms(func(r run) time.Duration { return r.clientCrypto })),
			lab.FromSamples("handshake", c.name(), p, "server_crypto", "ms", ms(func(r run) time.Duration { return r.serverCrypto })),
			lab.FromSamples("handshake", c.name(), p, "bytes_up", "B", num(func(r run) int { return r.up })),
			lab.FromSamples("handshake", c.name(), p, "bytes_down", "B", num(func(r run) int { return r.down })),
			lab.FromSamples("handshake", c.name(), p, "wire_bytes", "B", num(func(r run) int { return r.up + r.down })),
			lab.FromSamples("handshake", c.name(), p, "server_writes", "writes", num(func(r run) int { return r.writes })),
		)
		if w != nil {
			for j, r := range rs {
				w.Write([]string{c.Mode(), c.Mechanism(), strconv.FormatInt(c.Delay.Milliseconds(), 10), f3(r.confirmed), strconv.Itoa(r.up + r.down),
					c.Suite.String(), c.Backend.String(), c.Layout.String(), strconv.FormatBool(c.PinnedKey), c.Model,
					strconv.FormatInt(c.Kbit, 10), strconv.FormatInt(c.Jitter.Milliseconds(), 10), strconv.Itoa(j + 1),
					f3(r.connect), f3(r.clientCrypto), f3(r.serverCrypto), strconv.Itoa(r.up), strconv.Itoa(r.down),
					strconv.Itoa(r.flights), strconv.Itoa(r.writes), "true"})
			}
		}
		env.Progress(i+1, len(cfgs))
	}
	recordDerived(env, medians)
	recordSeed(env)
	return nil
}

func f3(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}

// measure runs one configuration: a server on loopback, shaped as the
// model says, and runs sequential client handshakes. Both sides' keys must
// match or the run is an error.
func measure(ctx context.Context, c Config, keys map[handshake.Sig]*handshake.SigningKey, runs int) ([]run, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if c.Model == "link" && (c.Delay > 0 || c.Kbit > 0) {
		l := netsim.Link{Latency: c.Delay, Jitter: c.Jitter, BandwidthKbit: c.Kbit}
		px, err := netsim.Start(addr, l, l)
		if err != nil {
			return nil, err
		}
		defer px.Close()
		addr = px.Addr()
	}
	scfg := &handshake.ServerConfig{Backend: c.Backend, Timeout: 30 * time.Second}
	for _, k := range keys {
		scfg.Keys = append(scfg.Keys, k)
	}
	type sres struct {
		r   *handshake.Result
		err error
	}
	results := make(chan sres, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if c.Model == "seed" {
				conn = netsim.SeedConn(conn, c.Delay)
			}
			r, err := handshake.Server(ctx, conn, scfg)
			conn.Close()
			results <- sres{r, err}
		}
	}()
	ccfg := &handshake.ClientConfig{Suite: c.Suite, Backend: c.Backend, Layout: c.Layout, Timeout: 30 * time.Second}
	if k := keys[c.Suite.Sig]; k != nil {
		if c.PinnedKey {
			ccfg.PinnedKey = k.PublicKey()
		} else {
			fp := k.Fingerprint()
			ccfg.PinnedFingerprint = fp[:]
		}
	}
	var out []run
	for i := 0; i <= runs; i++ { // run 0 warms up
		start := time.Now()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		connect := time.Since(start)
		if c.Model == "seed" {
			conn = netsim.SeedConn(conn, c.Delay)
		}
		cr, cerr := handshake.Client(ctx, conn, ccfg)
		conn.Close()
		sr := <-results
		if cerr != nil || sr.err != nil {
			return nil, fmt.Errorf("client: %v; server: %v", cerr, sr.err)
		}
		if cr.Key != sr.r.Key {
			return nil, fmt.Errorf("run %d: client and server derived different keys", i)
		}
		if i == 0 {
			continue
		}
		out = append(out, run{connect: connect, confirmed: cr.Stats.Confirmed, clientCrypto: cr.Stats.CryptoTime,
			serverCrypto: sr.r.Stats.CryptoTime, up: cr.Stats.BytesSent, down: cr.Stats.BytesReceived,
			writes: sr.r.Stats.Writes, flights: cr.Stats.Flights})
	}
	return out, nil
}

// recordDerived adds the ratios the seed's questions turn on.
func recordDerived(env *lab.Env, m map[string]float64) {
	ratio := func(cas, num, den, note string) {
		a, b := m[num], m[den]
		if a > 0 && b > 0 {
			env.Record(lab.Derived("handshake", cas, map[string]any{"numerator": num, "denominator": den}, "ratio", "x", a/b, note))
		}
	}
	for _, model := range []string{"seed", "link"} {
		for _, lvl := range []string{"512", "768", "1024"} {
			ratio(fmt.Sprintf("signed-bundled-vs-hybrid/mlkem%s/%s/20ms", lvl, model),
				fmt.Sprintf("mlkem%s+mldsa65/stdlib/%s/20ms/bundled", lvl, model), fmt.Sprintf("x25519+mlkem%s/stdlib/%s/20ms", lvl, model),
				"median handshake time, signed (bundled flight) over hybrid, same level and model")
			ratio(fmt.Sprintf("signed-separate-vs-bundled/mlkem%s/%s/20ms", lvl, model),
				fmt.Sprintf("mlkem%s+mldsa65/stdlib/%s/20ms/separate", lvl, model), fmt.Sprintf("mlkem%s+mldsa65/stdlib/%s/20ms/bundled", lvl, model),
				"median handshake time, the seed's separate writes over one bundled flight")
		}
	}
	for _, s := range []string{"mlkem768", "mlkem1024", "x25519+mlkem768", "mlkem768+mldsa65/%s/seed/0ms/bundled"} {
		num, den := s+"/stdlib/seed/0ms", s+"/circl/seed/0ms"
		if s == "mlkem768+mldsa65/%s/seed/0ms/bundled" {
			num, den = fmt.Sprintf(s, "stdlib"), fmt.Sprintf(s, "circl")
		}
		ratio("backend-stdlib-vs-circl/"+num, num, den, "median handshake time at 0 ms, crypto/mlkem+crypto/mldsa over circl")
	}
}

// seedTable is seed 003's table: means at 0/20/75 ms and wire bytes.
var seedTable = []struct {
	mode, mech string
	t          [3]float64
	bytes      float64
}{
	{"x25519", "X25519", [3]float64{0.290, 40.56, 150.74}, 72},
	{"mlkem", "ML-KEM-512", [3]float64{0.257, 40.54, 150.57}, 1576},
	{"mlkem", "ML-KEM-768", [3]float64{0.283, 40.56, 150.72}, 2280},
	{"mlkem", "ML-KEM-1024", [3]float64{0.293, 40.63, 150.69}, 3144},
	{"hybrid", "X25519+ML-KEM-512", [3]float64{0.506, 40.82, 150.90}, 1648},
	{"hybrid", "X25519+ML-KEM-768", [3]float64{0.539, 40.77, 150.90}, 2352},
	{"hybrid", "X25519+ML-KEM-1024", [3]float64{0.591, 40.81, 150.95}, 3216},
	{"signed", "ML-KEM-512+ML-DSA-65", [3]float64{0.714, 81.40, 301.60}, 6845},
	{"signed", "ML-KEM-768+ML-DSA-65", [3]float64{0.731, 81.35, 301.49}, 7549},
	{"signed", "ML-KEM-1024+ML-DSA-65", [3]float64{0.771, 81.32, 301.62}, 8413},
}

func recordSeed(env *lab.Env) {
	for _, s := range seedTable {
		for i, d := range []int{0, 20, 75} {
			p := map[string]any{"mode": s.mode, "mechanism": s.mech, "delay_model": "seed", "delay_ms": d}
			env.Record(lab.Quote("handshake", fmt.Sprintf("seed/%s/%s/%dms", s.mode, s.mech, d), p, "handshake_time", "ms", s.t[i], "seed",
				"seed 003 (Python + liboqs + cryptography), mean of 60 runs, measured elsewhere"))
		}
		env.Record(lab.Quote("handshake", fmt.Sprintf("seed/%s/%s", s.mode, s.mech), map[string]any{"mode": s.mode, "mechanism": s.mech},
			"wire_bytes", "B", s.bytes, "seed", "seed 003: 4-byte length prefixes + payloads, both directions"))
	}
}

// loopbackFloor records the median round trip of a 1-byte echo over
// loopback TCP between two goroutines: the transport floor under every
// handshake time at 0 ms, which no faster cryptography can remove.
func loopbackFloor(env *lab.Env, n int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			c.Write(b)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 1)
	var ms []float64
	for range n {
		start := time.Now()
		c.Write(b)
		if _, err := c.Read(b); err != nil {
			return err
		}
		ms = append(ms, float64(time.Since(start).Nanoseconds())/1e6)
	}
	r := lab.FromSamples("handshake", "loopback-rtt", map[string]any{"delay_model": "none", "delay_ms": 0}, "rtt", "ms", ms)
	r.Note = "1-byte echo between two goroutines over loopback TCP: the transport floor of a one-round-trip handshake at 0 ms"
	env.Record(r)
	return nil
}

// MeasureMedian runs one configuration of the minimal protocol with fresh
// server keys and returns the median time to a confirmed key (ms) and the
// bytes on the wire: for other scenarios that compare against it.
func MeasureMedian(ctx context.Context, c Config, runs int) (ms, bytes float64, err error) {
	keys := map[handshake.Sig]*handshake.SigningKey{}
	if c.Suite.Sig != handshake.SigNone {
		k, err := handshake.GenerateSigningKey(c.Suite.Sig)
		if err != nil {
			return 0, 0, err
		}
		keys[c.Suite.Sig] = k
	}
	rs, err := measure(ctx, c, keys, runs)
	if err != nil {
		return 0, 0, err
	}
	var t []float64
	for _, r := range rs {
		t = append(t, float64(r.confirmed.Nanoseconds())/1e6)
	}
	_, med, _, _ := lab.Summary(t)
	return med, float64(rs[0].up + rs[0].down), nil
}
