package handshakelab

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
	"github.com/wardlab/ward/pq/handshake"
)

// run is one measured handshake, both sides.
type run struct {
	connect, confirmed         time.Duration
	cpu                        time.Duration // the process's CPU time over the whole handshake, both sides
	clientCrypto, serverCrypto time.Duration
	up, down, writes, flights  int
}

// rig is one configuration ready to measure: a server on loopback, shaped
// as the model says, answering one handshake at a time.
type rig struct {
	c       Config
	addr    string
	ccfg    *handshake.ClientConfig
	wrap    func(net.Conn) net.Conn
	results <-chan served
	flights chan *separateFlight
	closers []func()
}

// newRig starts c's server (and its netsim proxy for the link model).
func newRig(ctx context.Context, c Config, keys map[handshake.Sig]*handshake.SigningKey) (*rig, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &rig{c: c, addr: ln.Addr().String(), closers: []func(){func() { ln.Close() }}}
	if c.Model == LinkModel && (c.Delay > 0 || c.Kbit > 0) {
		l := netsim.Link{Latency: c.Delay, Jitter: c.Jitter, BandwidthKbit: c.Kbit}
		px, err := netsim.Start(r.addr, l, l)
		if err != nil {
			r.close()
			return nil, err
		}
		r.closers = append(r.closers, func() { px.Close() })
		r.addr = px.Addr()
	}
	if c.Model == SleepModel {
		r.wrap = func(conn net.Conn) net.Conn { return netsim.SleepConn(conn, c.Delay) }
	}
	// The server's side: the field report's separate writes are the lab's
	// own layout, applied on top of the delay model.
	serverWrap := r.wrap
	if c.Layout == Separate {
		r.flights = make(chan *separateFlight, 1)
		serverWrap = func(conn net.Conn) net.Conn {
			if r.wrap != nil {
				conn = r.wrap(conn)
			}
			sf := newSeparateFlight(conn)
			r.flights <- sf
			return sf
		}
	}
	r.results = serve(ctx, ln, keys, c.Backend, serverWrap)
	r.ccfg = &handshake.ClientConfig{Suite: c.Suite, Backend: c.Backend, Timeout: 30 * time.Second}
	if k := keys[c.Suite.Sig]; k != nil {
		if c.PinnedKey {
			r.ccfg.PinnedKey = k.PublicKey()
		} else {
			fp := k.Fingerprint()
			r.ccfg.PinnedFingerprint = fp[:]
		}
	}
	return r, nil
}

// once runs one handshake. Both sides' keys must match or it is an error.
func (r *rig) once(ctx context.Context) (run, error) {
	cpu := lab.ProcessCPU.Read()
	d, cerr := handshake.Dial(ctx, r.addr, r.ccfg, r.wrap)
	sr := <-r.results
	spent := lab.ProcessCPU.Read() - cpu
	if cerr != nil || sr.err != nil {
		return run{}, fmt.Errorf("client: %v; server: %v", cerr, sr.err)
	}
	if d.Result.Key != sr.r.Key {
		return run{}, fmt.Errorf("client and server derived different keys")
	}
	writes := sr.r.Stats.Writes
	if r.flights != nil {
		writes = int((<-r.flights).writes.Load())
	}
	cs, ss := d.Result.Stats, sr.r.Stats
	return run{connect: d.Connect, confirmed: cs.Confirmed, cpu: spent, clientCrypto: cs.CryptoTime, serverCrypto: ss.CryptoTime,
		up: cs.BytesSent, down: cs.BytesReceived, writes: writes, flights: cs.Flights}, nil
}

func (r *rig) close() {
	for _, f := range r.closers {
		f()
	}
}

// interleave measures configurations in rounds: every server is up at
// once, each configuration is warmed up with one handshake, then every
// round runs one handshake of each, in alternating order (A B C, then C B
// A), so that all see the machine in the same state and run i of every
// configuration comes from round i, ready for lab.PairedRatio.
// progress is told each finished round.
func interleave(ctx context.Context, cfgs []Config, keys map[handshake.Sig]*handshake.SigningKey, runs int, progress func(done, total int)) ([][]run, error) {
	rigs := make([]*rig, 0, len(cfgs))
	defer func() {
		for _, r := range rigs {
			r.close()
		}
	}()
	for _, c := range cfgs {
		r, err := newRig(ctx, c, keys)
		if err != nil {
			return nil, fmt.Errorf("handshake %s: %w", c.name(), err)
		}
		rigs = append(rigs, r)
		if _, err := r.once(ctx); err != nil { // warm-up
			return nil, fmt.Errorf("handshake %s: warm-up: %w", c.name(), err)
		}
	}
	out := make([][]run, len(cfgs))
	for round := range runs {
		for j := range rigs {
			i := j
			if round%2 == 1 {
				i = len(rigs) - 1 - j
			}
			r, err := rigs[i].once(ctx)
			if err != nil {
				return nil, fmt.Errorf("handshake %s: run %d: %w", cfgs[i].name(), round, err)
			}
			out[i] = append(out[i], r)
		}
		progress(round+1, runs)
	}
	return out, nil
}

type served struct {
	r   *handshake.Result
	err error
}

// serve answers handshakes on ln one at a time until it closes, sending
// each server result.
func serve(ctx context.Context, ln net.Listener, keys map[handshake.Sig]*handshake.SigningKey, b handshake.Backend, wrap func(net.Conn) net.Conn) <-chan served {
	cfg := &handshake.ServerConfig{Backend: b, Timeout: 30 * time.Second}
	for _, k := range keys {
		cfg.Keys = append(cfg.Keys, k)
	}
	results := make(chan served, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if wrap != nil {
				conn = wrap(conn)
			}
			r, err := handshake.Server(ctx, conn, cfg)
			conn.Close()
			results <- served{r, err}
		}
	}()
	return results
}

// loopbackFloor records the round trip of a 1-byte echo over loopback TCP
// between two goroutines: the transport floor under every handshake time
// at 0 ms, which no faster cryptography can remove.
func loopbackFloor(env *lab.Env, n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
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
		return 0, err
	}
	defer c.Close()
	b := make([]byte, 1)
	var ms []float64
	for range n {
		start := time.Now()
		c.Write(b)
		if _, err := c.Read(b); err != nil {
			return 0, err
		}
		ms = append(ms, lab.Milliseconds(time.Since(start)))
	}
	r := lab.FromSamples("handshake", loopbackCase, map[string]any{"delay_model": "none", "delay_ms": 0}, "rtt", "ms", ms)
	r.Note = "1-byte echo between two goroutines over loopback TCP: the transport floor of a one-round-trip handshake at 0 ms"
	env.Record(r)
	return time.Duration(r.Median * float64(time.Millisecond)), nil
}

const loopbackCase = "loopback-rtt"
