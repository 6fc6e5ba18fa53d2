// Package netsim shapes loopback links for the lab's network experiments.
//
// Two delay models are offered, because they answer different questions:
//
//   - [Proxy] puts an in-process toxiproxy (github.com/Shopify/toxiproxy/v2)
//     between client and server and delays, jitters and rate-limits the
//     bytes in each direction, like a real link: writes pipeline, and a
//     flight of several messages costs one one-way delay.
//   - [SleepConn] reproduces the post-quantum field report's DelayedSocket:
//     it sleeps the one-way delay before every Write on both sides. A
//     flight split into three writes then costs three delays, which is
//     where the report's "signed needs two round trips" came from.
//
// What neither models (there is no netem on these machines): delay on the
// TCP handshake itself (SYN/SYN-ACK: connect is local to the proxy),
// packet loss and retransmission, and congestion control (slow start, the
// initial window). Those need a real network or Linux netem.
package netsim

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Link describes one direction of a simulated link.
type Link struct {
	// Latency is the one-way delay added to every byte.
	Latency time.Duration
	// Jitter varies the delay uniformly by ±Jitter.
	Jitter time.Duration
	// BandwidthKbit limits throughput in kilobits per second (0: none).
	BandwidthKbit int64
}

// Symmetric returns the same Link in both directions.
func Symmetric(l Link) (up, down Link) { return l, l }

// Proxy is a shaped TCP proxy listening on loopback.
type Proxy struct {
	proxy *toxiproxy.Proxy
	once  sync.Once
}

var (
	serverOnce sync.Once
	server     *toxiproxy.ApiServer
)

// apiServer returns the process's toxiproxy server; it only holds the
// proxy collection (its HTTP API is never started).
func apiServer() *toxiproxy.ApiServer {
	serverOnce.Do(func() {
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	})
	return server
}

var proxySeq struct {
	sync.Mutex
	n int
}

// Start listens on 127.0.0.1 on a free port and forwards every
// connection to upstream, shaping client→upstream with up and
// upstream→client with down. Close it when done.
func Start(upstream string, up, down Link) (*Proxy, error) {
	proxySeq.Lock()
	proxySeq.n++
	name := fmt.Sprintf("netsim-%d", proxySeq.n)
	proxySeq.Unlock()
	p := toxiproxy.NewProxy(apiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("netsim: starting proxy: %w", err)
	}
	px := &Proxy{proxy: p}
	for _, d := range []struct {
		stream string
		l      Link
	}{{"upstream", up}, {"downstream", down}} {
		if err := px.addToxics(d.stream, d.l); err != nil {
			px.Close()
			return nil, err
		}
	}
	return px, nil
}

func (px *Proxy) addToxics(stream string, l Link) error {
	if l.Latency < 0 || l.Jitter < 0 || l.BandwidthKbit < 0 || l.Jitter > l.Latency {
		return errors.New("netsim: latency, jitter and bandwidth must be non-negative, jitter at most latency")
	}
	if l.Latency > 0 || l.Jitter > 0 {
		j := fmt.Sprintf(`{"name":"lat-%s","type":"latency","stream":"%s","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`,
			stream, stream, l.Latency.Milliseconds(), l.Jitter.Milliseconds())
		if _, err := px.proxy.Toxics.AddToxicJson(strings.NewReader(j)); err != nil {
			return fmt.Errorf("netsim: latency: %w", err)
		}
	}
	if l.BandwidthKbit > 0 {
		// toxiproxy's rate is in kilobytes per second.
		rate := max(1, l.BandwidthKbit/8)
		j := fmt.Sprintf(`{"name":"bw-%s","type":"bandwidth","stream":"%s","toxicity":1,"attributes":{"rate":%d}}`, stream, stream, rate)
		if _, err := px.proxy.Toxics.AddToxicJson(strings.NewReader(j)); err != nil {
			return fmt.Errorf("netsim: bandwidth: %w", err)
		}
	}
	return nil
}

// Addr returns the address clients dial.
func (px *Proxy) Addr() string { return px.proxy.Listen }

// Close stops the proxy and its connections.
func (px *Proxy) Close() error {
	px.once.Do(func() { px.proxy.Stop() })
	return nil
}

// SleepConn wraps c so that every Write first sleeps delay, as the
// post-quantum field report's DelayedSocket did. Apply it on both sides to
// reproduce the report's delay model.
func SleepConn(c net.Conn, delay time.Duration) net.Conn {
	if delay <= 0 {
		return c
	}
	return &sleepConn{Conn: c, delay: delay}
}

type sleepConn struct {
	net.Conn
	delay time.Duration
}

func (c *sleepConn) Write(p []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(p)
}
