// Package tlslab is the lab scenario "tls": real TLS 1.3 handshakes with
// classical and post-quantum key exchange and certificate chains, full and
// resumed, through netsim links — seed 003's stated next step — with the
// minimal protocol's matching suites measured in the same run.
package tlslab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/wardlab/ward/handshake"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
	handshakelab "github.com/wardlab/ward/lab/scenarios/handshake"
	"github.com/wardlab/ward/pqtls"
)

// Scenario is the "tls" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "tls".
func (Scenario) Name() string { return "tls" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 003's next step: TLS 1.3 with X25519/X25519MLKEM768/SecP256r1MLKEM768/MLKEM1024 x ECDSA/Ed25519/RSA/ML-DSA chains, full and resumed"
}

// GroupNames are the key exchanges measured.
var GroupNames = []string{"X25519", "X25519MLKEM768", "SecP256r1MLKEM768", "MLKEM1024"}

type config struct {
	group   string
	cert    pqtls.CertAlg
	resumed bool
	delay   time.Duration
	kbit    int64
}

func (c config) name() string {
	mode := "full"
	if c.resumed {
		mode = "resumed"
	}
	s := fmt.Sprintf("%s/%v/%s/%dms", c.group, c.cert, mode, c.delay.Milliseconds())
	if c.kbit > 0 {
		s += fmt.Sprintf("/%dkbit", c.kbit)
	}
	return s
}

func (c config) params() map[string]any {
	mode := "full"
	if c.resumed {
		mode = "resumed"
	}
	return map[string]any{"group": c.group, "post_quantum_kex": pqtls.IsPostQuantum(pqtls.Groups[c.group]), "cert": c.cert.String(),
		"post_quantum_cert": c.cert.PostQuantum(), "handshake": mode, "delay_ms": c.delay.Milliseconds(), "bandwidth_kbit": c.kbit}
}

// Run measures the matrix.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	runs := 20
	if env.Quick {
		runs = 3
	}
	chains := map[pqtls.CertAlg]*pqtls.Chain{}
	for _, a := range pqtls.CertAlgs() {
		c, err := pqtls.GenerateChain(a)
		if err != nil {
			return err
		}
		chains[a] = c
		env.Record(lab.Derived("tls", "chain/"+a.String(), map[string]any{"cert": a.String()}, "chain_bytes", "B", float64(c.WireBytes),
			"DER size of leaf + intermediate, as sent in the Certificate message"))
	}
	var cfgs []config
	for _, d := range []time.Duration{0, 20 * time.Millisecond, 75 * time.Millisecond} {
		for _, g := range GroupNames {
			for _, a := range pqtls.CertAlgs() {
				for _, res := range []bool{false, true} {
					cfgs = append(cfgs, config{group: g, cert: a, resumed: res, delay: d})
				}
			}
		}
	}
	for _, g := range []string{"X25519", "X25519MLKEM768"} {
		for _, a := range []pqtls.CertAlg{pqtls.ECDSAP256, pqtls.MLDSA65} {
			cfgs = append(cfgs, config{group: g, cert: a, delay: 20 * time.Millisecond, kbit: 1000})
		}
	}
	total := len(cfgs) + 4
	med := map[string]float64{}
	bytesDown := map[string]float64{}
	for i, c := range cfgs {
		rs, err := measure(ctx, c, chains[c.cert], runs)
		if err != nil {
			return fmt.Errorf("tls %s: %w", c.name(), err)
		}
		p := c.params()
		var hs, conn, up, down, fl []float64
		for _, m := range rs {
			hs = append(hs, float64(m.Handshake.Nanoseconds())/1e6)
			conn = append(conn, float64(m.Connect.Nanoseconds())/1e6)
			up = append(up, float64(m.BytesUp))
			down = append(down, float64(m.BytesDown))
			fl = append(fl, float64(m.Flights))
		}
		ht := lab.FromSamples("tls", c.name(), p, "handshake_time", "ms", hs)
		bd := lab.FromSamples("tls", c.name(), p, "bytes_down", "B", down)
		med[c.name()], bytesDown[c.name()] = ht.Median, bd.Median
		env.Record(ht, bd,
			lab.FromSamples("tls", c.name(), p, "connect_time", "ms", conn),
			lab.FromSamples("tls", c.name(), p, "bytes_up", "B", up),
			lab.FromSamples("tls", c.name(), p, "flights", "flights", fl))
		if c.kbit == 0 {
			extra := pqtls.ExtraRoundTrips(int(bd.Median), pqtls.InitialWindow)
			modeled := ht.Median + float64(extra)*2*float64(c.delay.Milliseconds())
			p2 := map[string]any{}
			for k, v := range p {
				p2[k] = v
			}
			p2["extra_round_trips"] = extra
			env.Record(lab.Derived("tls", c.name(), p2, "modeled_time_cwnd", "ms", modeled,
				fmt.Sprintf("measured median + %d extra round trip(s) of slow start for a %d-byte server flight against a 10 x 1460-byte initial window (model, not measured)", extra, int(bd.Median))))
		}
		env.Progress(i+1, total)
	}
	// Ratios: PQ over classical key exchange, resumption saving.
	for _, d := range []string{"0ms", "20ms", "75ms"} {
		for _, a := range pqtls.CertAlgs() {
			for _, pq := range GroupNames[1:] {
				num, den := fmt.Sprintf("%s/%v/full/%s", pq, a, d), fmt.Sprintf("X25519/%v/full/%s", a, d)
				if med[num] > 0 && med[den] > 0 {
					env.Record(lab.Derived("tls", "pq-kex-cost/"+num, map[string]any{"numerator": num, "denominator": den}, "time_ratio", "x", med[num]/med[den],
						"median full-handshake time with the PQ group over X25519, same chain and delay"))
					env.Record(lab.Derived("tls", "pq-kex-cost/"+num, map[string]any{"numerator": num, "denominator": den}, "bytes_ratio", "x", bytesDown[num]/bytesDown[den],
						"server-to-client bytes with the PQ group over X25519, same chain"))
				}
			}
			full, res := fmt.Sprintf("X25519MLKEM768/%v/full/%s", a, d), fmt.Sprintf("X25519MLKEM768/%v/resumed/%s", a, d)
			if med[full] > 0 && med[res] > 0 {
				rp := map[string]any{"full": full, "resumed": res}
				env.Record(lab.Derived("tls", "resumption-saving/"+full, rp, "time_ratio", "x", med[full]/med[res],
					"median full-handshake time over resumed, X25519MLKEM768"),
					lab.Derived("tls", "resumption-saving/"+full, rp, "bytes_ratio", "x", bytesDown[full]/bytesDown[res],
						"server-to-client bytes, full over resumed, X25519MLKEM768"))
			}
		}
	}
	// ward's measurement path against a bare crypto/tls handshake,
	// interleaved in one loop so both see the same machine state.
	wardMs, bare, err := compareBare(ctx, chains[pqtls.ECDSAP256], runs*10)
	if err != nil {
		return err
	}
	bp := map[string]any{"group": "X25519MLKEM768", "cert": "ecdsa-p256"}
	env.Record(lab.FromSamples("tls", "bare-crypto-tls/X25519MLKEM768/ecdsa-p256/full/0ms", bp, "handshake_time", "ms", bare),
		lab.FromSamples("tls", "ward-dial/X25519MLKEM768/ecdsa-p256/full/0ms", bp, "handshake_time", "ms", wardMs))
	_, bm, _, _ := lab.Summary(bare)
	_, wm, _, _ := lab.Summary(wardMs)
	if wm > 0 && bm > 0 {
		env.Record(lab.Derived("tls", "ward-vs-bare/X25519MLKEM768/ecdsa-p256/0ms", nil, "time_ratio", "x", wm/bm,
			"median of ward's measured handshake (counting connection, pqtls.Dial) over a bare crypto/tls handshake, interleaved on loopback"))
	}
	// The minimal protocol's matching suites, same delays, link model.
	for i, s := range []handshake.Suite{{KEX: handshake.X25519}, {KEX: handshake.X25519MLKEM768}, {KEX: handshake.MLKEM1024},
		{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}} {
		for _, d := range []time.Duration{0, 20 * time.Millisecond, 75 * time.Millisecond} {
			ms, b, err := handshakelab.MeasureMedian(ctx, handshakelab.Config{Suite: s, Model: "link", Delay: d}, runs)
			if err != nil {
				return err
			}
			p := map[string]any{"suite": s.String(), "delay_ms": d.Milliseconds(), "protocol": "ward minimal"}
			cas := fmt.Sprintf("minimal/%v/%dms", s, d.Milliseconds())
			env.Record(lab.Derived("tls", cas, p, "handshake_time", "ms", ms, fmt.Sprintf("median of %d runs of ward's minimal protocol (handshake scenario), link model", runs)),
				lab.Derived("tls", cas, p, "wire_bytes", "B", b, "both directions, framing included"))
		}
		env.Progress(len(cfgs)+i+1, total)
	}
	return nil
}

// measure runs one configuration, checking what was negotiated.
func measure(ctx context.Context, c config, ch *pqtls.Chain, runs int) ([]*pqtls.Measurement, error) {
	group := pqtls.Groups[c.group]
	addr, stop, err := pqtls.NewTestServer(&tls.Config{Certificates: []tls.Certificate{ch.Certificate}, CurvePreferences: []tls.CurveID{group}})
	if err != nil {
		return nil, err
	}
	defer stop()
	if c.delay > 0 || c.kbit > 0 {
		l := netsim.Link{Latency: c.delay, BandwidthKbit: c.kbit}
		px, err := netsim.Start(addr, l, l)
		if err != nil {
			return nil, err
		}
		defer px.Close()
		addr = px.Addr()
	}
	cache := tls.NewLRUClientSessionCache(8)
	newCfg := func() *tls.Config {
		cfg := &tls.Config{RootCAs: ch.Roots, ServerName: "localhost", CurvePreferences: []tls.CurveID{group}, MinVersion: tls.VersionTLS13}
		if c.resumed {
			cfg.ClientSessionCache = cache
		}
		return cfg
	}
	if c.resumed { // prime the ticket
		if _, err := pqtls.Dial(ctx, addr, newCfg()); err != nil {
			return nil, err
		}
	}
	var out []*pqtls.Measurement
	for range runs {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := pqtls.Dial(dctx, addr, newCfg())
		cancel()
		if err != nil {
			return nil, err
		}
		st := m.State
		if st.CurveID != group || st.DidResume != c.resumed || st.Version != tls.VersionTLS13 {
			return nil, fmt.Errorf("negotiated %s, wanted %s resumed=%v", pqtls.Describe(st), c.group, c.resumed)
		}
		if !c.resumed && pqtls.LeafAlgorithm(st) != ch.Leaf.PublicKeyAlgorithm.String() {
			return nil, fmt.Errorf("certificate %s, wanted %v", pqtls.LeafAlgorithm(st), c.cert)
		}
		out = append(out, m)
	}
	return out, nil
}

// compareBare times, alternately, ward's measured dial and a plain
// crypto/tls handshake with no wrapper against the same server: the
// baseline for ward's own overhead.
func compareBare(ctx context.Context, ch *pqtls.Chain, runs int) (ward, bare []float64, err error) {
	group := []tls.CurveID{tls.X25519MLKEM768}
	addr, stop, err := pqtls.NewTestServer(&tls.Config{Certificates: []tls.Certificate{ch.Certificate}, CurvePreferences: group})
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	cfg := func() *tls.Config {
		return &tls.Config{RootCAs: ch.Roots, ServerName: "localhost", CurvePreferences: group}
	}
	for i := 0; i <= runs; i++ {
		m, err := pqtls.Dial(ctx, addr, cfg())
		if err != nil {
			return nil, nil, err
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		tc := tls.Client(c, cfg())
		start := time.Now()
		err = tc.HandshakeContext(ctx)
		d := time.Since(start)
		c.Close()
		if err != nil {
			return nil, nil, err
		}
		if i == 0 { // warm-up
			continue
		}
		ward = append(ward, float64(m.Handshake.Nanoseconds())/1e6)
		bare = append(bare, float64(d.Nanoseconds())/1e6)
	}
	return ward, bare, nil
}
