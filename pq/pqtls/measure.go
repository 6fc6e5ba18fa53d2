package pqtls

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// countingConn counts bytes each way and the flights: a flight is a run of
// writes (or of reads) before the direction changes.
type countingConn struct {
	net.Conn
	mu       sync.Mutex
	up, down int
	last     byte // 'w' or 'r'
	flights  int
}

func (c *countingConn) note(dir byte, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= 0 {
		return
	}
	if dir == 'w' {
		c.up += n
	} else {
		c.down += n
	}
	if c.last != dir {
		c.flights++
		c.last = dir
	}
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.note('r', n)
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.note('w', n)
	return n, err
}

// Measurement is one client handshake.
type Measurement struct {
	Connect   time.Duration // TCP connect
	Handshake time.Duration // TLS handshake, ClientHello to Finished
	BytesUp   int           // client to server during the handshake (TLS records, no TCP/IP headers)
	BytesDown int
	Flights   int // flights seen by the client, both directions
	State     tls.ConnectionState
}

// Dial connects to addr and performs one TLS handshake with cfg, counting
// bytes and flights. It then reads one byte, which lets a TLS 1.3 client
// process the server's session ticket (servers that send nothing more cost
// a 200 ms wait when cfg has a session cache).
func Dial(ctx context.Context, addr string, cfg *tls.Config) (*Measurement, error) {
	var d net.Dialer
	start := time.Now()
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	m := &Measurement{Connect: time.Since(start)}
	cc := &countingConn{Conn: raw}
	conn := tls.Client(cc, cfg)
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	start = time.Now()
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	m.Handshake = time.Since(start)
	cc.mu.Lock()
	m.BytesUp, m.BytesDown, m.Flights = cc.up, cc.down, cc.flights
	cc.mu.Unlock()
	m.State = conn.ConnectionState()
	if cfg.ClientSessionCache != nil {
		// TLS 1.3 tickets arrive right after the handshake; a short read
		// lets the client store one without waiting on servers that send
		// nothing more.
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var b [1]byte
		conn.Read(b[:])
	}
	return m, nil
}

// InitialWindow is TCP's initial congestion window in bytes: 10 segments
// of 1,460 bytes (RFC 6928).
const InitialWindow = 10 * 1460

// ExtraRoundTrips estimates the round trips that TCP slow start adds to a
// server flight of flight bytes, starting from an initial window of
// window bytes that doubles every round trip. It assumes no loss, an
// idle connection, a receiver window that is not the limit, and that the
// flight is sent back to back; it ignores TCP/IP header bytes.
func ExtraRoundTrips(flight, window int) int {
	if window <= 0 {
		return 0
	}
	extra, sent, w := 0, window, window
	for sent < flight {
		w *= 2
		sent += w
		extra++
	}
	return extra
}

// ErrNoMeasurement is returned when a probe produced no handshake.
var ErrNoMeasurement = errors.New("pqtls: no handshake measured")

// Describe names what a connection negotiated.
func Describe(st tls.ConnectionState) string {
	return fmt.Sprintf("%s, %v%s, %s, resumed=%v", tls.VersionName(st.Version), st.CurveID, pqMark(st.CurveID), tls.CipherSuiteName(st.CipherSuite), st.DidResume)
}

func pqMark(id tls.CurveID) string {
	if IsPostQuantum(id) {
		return " (post-quantum)"
	}
	return ""
}

// LeafAlgorithm names the server certificate's key algorithm.
func LeafAlgorithm(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return "none"
	}
	return st.PeerCertificates[0].PublicKeyAlgorithm.String()
}

// DialRuns measures runs TLS handshakes against addr, each with a fresh
// connection and newConfig(), under a per-handshake timeout; check, when
// not nil, vets each measurement (what was negotiated).
func DialRuns(ctx context.Context, addr string, newConfig func() *tls.Config, runs int, timeout time.Duration,
	check func(*Measurement) error) ([]*Measurement, error) {
	var out []*Measurement
	for range runs {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		m, err := Dial(dctx, addr, newConfig())
		cancel()
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(m); err != nil {
				return nil, err
			}
		}
		out = append(out, m)
	}
	return out, nil
}
