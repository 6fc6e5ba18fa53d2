// Package tlslab is the lab scenario "tls": real TLS 1.3 handshakes with
// classical and post-quantum key exchange and certificate chains, full and
// resumed, through netsim links — the next step the post-quantum field
// report named and did not take — with the minimal protocol's matching
// suites measured in the same run.
package tlslab

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/pq/handshake"
	"github.com/wardlab/ward/pq/pqtls"
)

// Scenario is the "tls" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "tls".
func (Scenario) Name() string { return "tls" }

// Title names the topic.
func (Scenario) Title() string { return "Post-quantum key exchange in real TLS 1.3" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What do post-quantum key exchange and ML-DSA certificates cost in a real TLS 1.3 handshake, full and resumed, and what does real TLS cost over the minimal protocol?"
}

// GroupNames are the key exchanges measured.
var GroupNames = []string{"X25519", "X25519MLKEM768", "SecP256r1MLKEM768", "MLKEM1024"}

// Delays are the one-way delays measured (link model).
var Delays = []time.Duration{0, 20 * time.Millisecond, 75 * time.Millisecond}

// Runs per configuration in each profile.
const (
	FullRuns  = 20
	QuickRuns = 7
)

// config is one measured configuration; its name is the case key.
type config struct {
	group   string
	cert    pqtls.CertAlg
	resumed bool
	delay   time.Duration
	kbit    int64
}

func (c config) mode() string {
	if c.resumed {
		return "resumed"
	}
	return "full"
}

func (c config) name() string {
	s := fmt.Sprintf("%s/%v/%s/%dms", c.group, c.cert, c.mode(), c.delay.Milliseconds())
	if c.kbit > 0 {
		s += fmt.Sprintf("/%dkbit", c.kbit)
	}
	return s
}

func (c config) params() map[string]any {
	return map[string]any{"group": c.group, "post_quantum_kex": pqtls.IsPostQuantum(pqtls.Groups[c.group]), "cert": c.cert.String(),
		"post_quantum_cert": c.cert.PostQuantum(), "handshake": c.mode(), "delay_ms": c.delay.Milliseconds(), "bandwidth_kbit": c.kbit}
}

// headlineCerts and headlineGroups are measured at every delay in the
// quick profile too; the rest of the matrix at 75 ms only in the full one.
var (
	headlineCerts  = []pqtls.CertAlg{pqtls.ECDSAP256, pqtls.MLDSA65}
	headlineGroups = []string{"X25519", "X25519MLKEM768"}
)

// configs returns the matrix for a profile.
func configs(quick bool) []config {
	var out []config
	for _, d := range Delays {
		for _, g := range GroupNames {
			for _, a := range pqtls.CertAlgs() {
				if quick && d == Delays[2] && !(contains(headlineGroups, g) && contains(headlineCerts, a)) {
					continue
				}
				for _, res := range []bool{false, true} {
					out = append(out, config{group: g, cert: a, resumed: res, delay: d})
				}
			}
		}
	}
	for _, g := range headlineGroups {
		for _, a := range headlineCerts {
			out = append(out, config{group: g, cert: a, delay: 20 * time.Millisecond, kbit: 1000})
		}
	}
	return out
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// minimalSuites are the minimal protocol's counterparts of TLS set-ups.
var minimalSuites = []handshake.Suite{{KEX: handshake.X25519}, {KEX: handshake.X25519MLKEM768}, {KEX: handshake.MLKEM1024},
	{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}}

func minimalCase(s handshake.Suite, d time.Duration) string {
	return fmt.Sprintf("minimal/%v/%dms", s, d.Milliseconds())
}

// Run measures the matrix, the ratios, ward's measuring overhead over a
// bare crypto/tls handshake and the minimal protocol's suites.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	runs := FullRuns
	if env.Quick {
		runs = QuickRuns
	}
	chains, err := chainsFor(env)
	if err != nil {
		return err
	}
	cfgs := configs(env.Quick)
	total := len(cfgs) + len(minimalSuites) + 1
	times, down := map[string][]float64{}, map[string][]float64{}
	for i, c := range cfgs {
		ms, err := measure(ctx, c, chains[c.cert], runs)
		if err != nil {
			return fmt.Errorf("tls %s: %w", c.name(), err)
		}
		times[c.name()], down[c.name()] = record(env, c, ms)
		env.Progress(i+1, total)
	}
	for _, r := range ratios() {
		p := map[string]any{"numerator": r.num.name(), "denominator": r.den.name()}
		if num, den := times[r.num.name()], times[r.den.name()]; len(num) > 0 && len(den) > 0 {
			env.Record(lab.CrossRatio("tls", r.name, p, "time_ratio", num, den, r.note))
			env.Record(lab.CrossRatio("tls", r.name, p, "bytes_ratio", down[r.num.name()], down[r.den.name()], "server-to-client bytes, same pair"))
		}
	}
	if err := recordBare(ctx, env, chains[pqtls.ECDSAP256], runs*10); err != nil {
		return err
	}
	env.Progress(len(cfgs)+1, total)
	for i, s := range minimalSuites {
		for _, d := range Delays {
			ms, b, err := minimalOverLink(ctx, s, d, runs)
			if err != nil {
				return err
			}
			p := map[string]any{"suite": s.String(), "delay_ms": d.Milliseconds(), "protocol": "ward minimal"}
			t := lab.FromSamples("tls", minimalCase(s, d), p, "handshake_time", "ms", ms)
			t.Note = "ward's minimal protocol over the same link model, measured through package handshake's API"
			env.Record(t, lab.Derived("tls", minimalCase(s, d), p, "wire_bytes", "B", b, "both directions, framing included"))
		}
		env.Progress(len(cfgs)+2+i, total)
	}
	return nil
}

func chainsFor(env *lab.Env) (map[pqtls.CertAlg]*pqtls.Chain, error) {
	chains := map[pqtls.CertAlg]*pqtls.Chain{}
	for _, a := range pqtls.CertAlgs() {
		c, err := pqtls.GenerateChain(a)
		if err != nil {
			return nil, err
		}
		chains[a] = c
		env.Record(lab.Derived("tls", chainCase(a), map[string]any{"cert": a.String()}, "chain_bytes", "B", float64(c.WireBytes),
			"DER size of leaf + intermediate, as sent in the Certificate message"))
	}
	return chains, nil
}

func chainCase(a pqtls.CertAlg) string { return "chain/" + a.String() }

// record records a configuration's results and returns its handshake
// times (ms) and server-to-client bytes.
func record(env *lab.Env, c config, rs []*pqtls.Measurement) (times, down []float64) {
	var conn, up, fl []float64
	for _, m := range rs {
		times = append(times, lab.Milliseconds(m.Handshake))
		conn = append(conn, lab.Milliseconds(m.Connect))
		up = append(up, float64(m.BytesUp))
		down = append(down, float64(m.BytesDown))
		fl = append(fl, float64(m.Flights))
	}
	p := c.params()
	ht := lab.FromSamples("tls", c.name(), p, "handshake_time", "ms", times)
	bd := lab.FromSamples("tls", c.name(), p, "bytes_down", "B", down)
	env.Record(ht, bd, lab.FromSamples("tls", c.name(), p, "connect_time", "ms", conn),
		lab.FromSamples("tls", c.name(), p, "bytes_up", "B", up), lab.FromSamples("tls", c.name(), p, "flights", "flights", fl))
	if c.kbit == 0 {
		extra := pqtls.ExtraRoundTrips(int(bd.Median), pqtls.InitialWindow)
		p2 := maps.Clone(p)
		p2["extra_round_trips"] = extra
		env.Record(lab.Derived("tls", c.name(), p2, "modeled_time_cwnd", "ms", ht.Median+float64(extra)*2*float64(c.delay.Milliseconds()),
			fmt.Sprintf("measured median + %d extra round trip(s) of slow start for a %d-byte server flight against a 10 x 1460-byte initial window (model, not measured)", extra, int(bd.Median))))
	}
	return times, down
}

// ratio is a comparison the section quotes.
type ratio struct {
	name     string
	num, den config
	note     string
}

func pqCost(group string, a pqtls.CertAlg, d time.Duration) string {
	return "pq-kex-cost/" + config{group: group, cert: a, delay: d}.name()
}
func resumptionSaving(a pqtls.CertAlg, d time.Duration) string {
	return "resumption-saving/" + config{group: "X25519MLKEM768", cert: a, delay: d}.name()
}

// ratios: each PQ group over X25519, and full over resumed handshakes.
func ratios() []ratio {
	var out []ratio
	for _, d := range Delays {
		for _, a := range pqtls.CertAlgs() {
			for _, pq := range GroupNames[1:] {
				out = append(out, ratio{pqCost(pq, a, d), config{group: pq, cert: a, delay: d}, config{group: "X25519", cert: a, delay: d},
					"full-handshake time with the PQ group over X25519, same chain and delay"})
			}
			full := config{group: "X25519MLKEM768", cert: a, delay: d}
			res := full
			res.resumed = true
			out = append(out, ratio{resumptionSaving(a, d), full, res, "full-handshake time over resumed, X25519MLKEM768"})
		}
	}
	return out
}

const (
	bareCase     = "bare-crypto-tls/X25519MLKEM768/ecdsa-p256/full/0ms"
	wardDialCase = "ward-dial/X25519MLKEM768/ecdsa-p256/full/0ms"
	wardVsBare   = "ward-vs-bare/X25519MLKEM768/ecdsa-p256/0ms"
)

// recordBare times ward's measured dial against a bare crypto/tls
// handshake, interleaved.
func recordBare(ctx context.Context, env *lab.Env, ch *pqtls.Chain, runs int) error {
	ward, bare, err := compareBare(ctx, ch, runs)
	if err != nil {
		return err
	}
	bp := map[string]any{"group": "X25519MLKEM768", "cert": "ecdsa-p256"}
	env.Record(lab.FromSamples("tls", bareCase, bp, "handshake_time", "ms", bare),
		lab.FromSamples("tls", wardDialCase, bp, "handshake_time", "ms", ward),
		lab.PairedRatio("tls", wardVsBare, bp, "time_ratio", ward, bare,
			"ward's measured handshake (counting connection, pqtls.Dial) over a bare crypto/tls handshake, interleaved on loopback, per pair"))
	return nil
}

// newClientConfig is the client side of a measured configuration.
func newClientConfig(ch *pqtls.Chain, group tls.CurveID, cache tls.ClientSessionCache) *tls.Config {
	return &tls.Config{RootCAs: ch.Roots, ServerName: "localhost", CurvePreferences: []tls.CurveID{group}, MinVersion: tls.VersionTLS13,
		ClientSessionCache: cache}
}
