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
	clientCrypto, serverCrypto time.Duration
	up, down, writes, flights  int
}

// measure runs one configuration: a server on loopback, shaped as the
// model says, and runs sequential client handshakes after one warm-up.
// Both sides' keys must match or the run is an error.
func measure(ctx context.Context, c Config, keys map[handshake.Sig]*handshake.SigningKey, runs int) ([]run, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if c.Model == LinkModel && (c.Delay > 0 || c.Kbit > 0) {
		l := netsim.Link{Latency: c.Delay, Jitter: c.Jitter, BandwidthKbit: c.Kbit}
		px, err := netsim.Start(addr, l, l)
		if err != nil {
			return nil, err
		}
		defer px.Close()
		addr = px.Addr()
	}
	var wrap func(net.Conn) net.Conn
	if c.Model == SleepModel {
		wrap = func(conn net.Conn) net.Conn { return netsim.SleepConn(conn, c.Delay) }
	}
	// The server's side: the field report's separate writes are the lab's
	// own layout, applied on top of the delay model.
	var flights chan *separateFlight
	serverWrap := wrap
	if c.Layout == Separate {
		flights = make(chan *separateFlight, 1)
		serverWrap = func(conn net.Conn) net.Conn {
			if wrap != nil {
				conn = wrap(conn)
			}
			sf := newSeparateFlight(conn)
			flights <- sf
			return sf
		}
	}
	results := serve(ctx, ln, keys, c.Backend, serverWrap)
	ccfg := &handshake.ClientConfig{Suite: c.Suite, Backend: c.Backend, Timeout: 30 * time.Second}
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
		d, cerr := handshake.Dial(ctx, addr, ccfg, wrap)
		sr := <-results
		if cerr != nil || sr.err != nil {
			return nil, fmt.Errorf("client: %v; server: %v", cerr, sr.err)
		}
		if d.Result.Key != sr.r.Key {
			return nil, fmt.Errorf("run %d: client and server derived different keys", i)
		}
		writes := sr.r.Stats.Writes
		if flights != nil {
			writes = int((<-flights).writes.Load())
		}
		if i > 0 {
			cs, ss := d.Result.Stats, sr.r.Stats
			out = append(out, run{connect: d.Connect, confirmed: cs.Confirmed, clientCrypto: cs.CryptoTime, serverCrypto: ss.CryptoTime,
				up: cs.BytesSent, down: cs.BytesReceived, writes: writes, flights: cs.Flights})
		}
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
