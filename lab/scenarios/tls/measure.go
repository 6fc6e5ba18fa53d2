package tlslab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
	"github.com/wardlab/ward/pq/pqtls"
)

// serve serves TLS on a loopback listener: each connection handshakes,
// receives one byte (so that the client processes its session ticket) and
// is closed. It returns the address and a stop function.
func serve(cfg *tls.Config) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				tc := tls.Server(c, cfg)
				if tc.Handshake() == nil {
					tc.Write([]byte{1})
				}
			}()
		}
	}()
	var once sync.Once
	return ln.Addr().String(), func() { once.Do(func() { ln.Close(); wg.Wait() }) }, nil
}

// measure runs one configuration after a warm-up (which, for resumed
// handshakes, also primes the ticket), checking what was negotiated.
func measure(ctx context.Context, c config, ch *pqtls.Chain, runs int) ([]*pqtls.Measurement, error) {
	group := pqtls.Groups[c.group]
	addr, stop, err := serve(&tls.Config{Certificates: []tls.Certificate{ch.Certificate}, CurvePreferences: []tls.CurveID{group}})
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
	var cache tls.ClientSessionCache
	if c.resumed {
		cache = tls.NewLRUClientSessionCache(8)
	}
	newCfg := func() *tls.Config { return newClientConfig(ch, group, cache) }
	if _, err := pqtls.Dial(ctx, addr, newCfg()); err != nil { // warm-up
		return nil, err
	}
	return pqtls.DialRuns(ctx, addr, newCfg, runs, 30*time.Second, func(m *pqtls.Measurement) error {
		st := m.State
		if st.CurveID != group || st.DidResume != c.resumed || st.Version != tls.VersionTLS13 {
			return fmt.Errorf("negotiated %s, wanted %s resumed=%v", pqtls.Describe(st), c.group, c.resumed)
		}
		if !c.resumed && pqtls.LeafAlgorithm(st) != ch.Leaf.PublicKeyAlgorithm.String() {
			return fmt.Errorf("certificate %s, wanted %v", pqtls.LeafAlgorithm(st), c.cert)
		}
		return nil
	})
}

// compareBare times, alternately, ward's measured dial and a plain
// crypto/tls handshake with no wrapper against the same server: the
// baseline for ward's own overhead.
func compareBare(ctx context.Context, ch *pqtls.Chain, runs int) (ward, bare []float64, err error) {
	addr, stop, err := serve(&tls.Config{Certificates: []tls.Certificate{ch.Certificate}, CurvePreferences: []tls.CurveID{tls.X25519MLKEM768}})
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	cfg := func() *tls.Config { return newClientConfig(ch, tls.X25519MLKEM768, nil) }
	for i := 0; i <= runs; i++ {
		m, err := pqtls.Dial(ctx, addr, cfg())
		if err != nil {
			return nil, nil, err
		}
		d, err := bareHandshake(ctx, addr, cfg())
		if err != nil {
			return nil, nil, err
		}
		if i > 0 { // run 0 warms up
			ward = append(ward, lab.Milliseconds(m.Handshake))
			bare = append(bare, lab.Milliseconds(d))
		}
	}
	return ward, bare, nil
}

func bareHandshake(ctx context.Context, addr string, cfg *tls.Config) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	tc := tls.Client(c, cfg)
	start := time.Now()
	err = tc.HandshakeContext(ctx)
	return time.Since(start), err
}
