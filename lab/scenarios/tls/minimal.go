package tlslab

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
	"github.com/wardlab/ward/pq/handshake"
)

// minimalOverLink measures ward's minimal protocol (package handshake)
// through its public API over the same simulated link as TLS: a server
// from handshake.Serve behind netsim, runs client handshakes from
// handshake.Dial after one warm-up. It returns the times to a confirmed
// key (ms) and the bytes both ways.
func minimalOverLink(ctx context.Context, s handshake.Suite, delay time.Duration, runs int) (ms []float64, bytes float64, err error) {
	cfg := &handshake.ServerConfig{Timeout: 30 * time.Second}
	ccfg := &handshake.ClientConfig{Suite: s, Timeout: 30 * time.Second}
	if s.Sig != handshake.SigNone {
		k, err := handshake.GenerateSigningKey(s.Sig)
		if err != nil {
			return nil, 0, err
		}
		cfg.Keys = []*handshake.SigningKey{k}
		ccfg.PinnedKey = k.PublicKey()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- handshake.Serve(ctx, ln, cfg, handshake.ServeOptions{}, func(c net.Conn, _ *handshake.Result, _ error) { c.Close() })
	}()
	defer func() { cancel(); ln.Close(); <-served }()
	addr := ln.Addr().String()
	if delay > 0 {
		l := netsim.Link{Latency: delay}
		px, err := netsim.Start(addr, l, l)
		if err != nil {
			return nil, 0, err
		}
		defer px.Close()
		addr = px.Addr()
	}
	for i := 0; i <= runs; i++ { // run 0 warms up
		d, err := handshake.Dial(ctx, addr, ccfg, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("minimal protocol, %v at %v: %w", s, delay, err)
		}
		if i > 0 {
			st := d.Result.Stats
			ms = append(ms, lab.Milliseconds(st.Confirmed))
			bytes = float64(st.BytesSent + st.BytesReceived)
		}
	}
	return ms, bytes, nil
}
