// Package conncap caps a listener's open connections in total and per
// remote address, and how long a connection may wait before its first
// byte. A connection over a cap is closed as soon as it is accepted, so
// that clients that open sockets and send nothing (or trickle) cannot hold
// every slot: one address gets at most PerAddress of them, each for at
// most FirstByte if it stays silent, and a real client from another
// address is still served.
package conncap

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Options are the caps. Zero means no cap.
type Options struct {
	// Total caps the open connections.
	Total int
	// PerAddress caps the open connections of one remote address (IPv6:
	// one /64).
	PerAddress int
	// FirstByte bounds the wait for a connection's first byte, whatever
	// read deadline the server sets before it.
	FirstByte time.Duration
}

// Listener wraps a net.Listener with caps.
type Listener struct {
	net.Listener
	total, perAddr int
	firstByte      time.Duration

	mu      sync.Mutex
	open    int
	byAddr  map[netip.Addr]int
	refused uint64
}

// New wraps ln with the caps of o.
func New(ln net.Listener, o Options) *Listener {
	return &Listener{Listener: ln, total: o.Total, perAddr: o.PerAddress, firstByte: o.FirstByte, byAddr: map[netip.Addr]int{}}
}

// Refused counts the connections closed for being over a cap.
func (l *Listener) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Addr groups a connection's remote address: the address itself for IPv4,
// its /64 for IPv6.
func Addr(c net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(c.String())
	if err != nil {
		return netip.IPv4Unspecified()
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// Accept returns the next connection within the caps, closing the ones
// over them.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a := Addr(c.RemoteAddr())
		l.mu.Lock()
		if (l.total > 0 && l.open >= l.total) || (l.perAddr > 0 && l.byAddr[a] >= l.perAddr) {
			l.refused++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open++
		l.byAddr[a]++
		l.mu.Unlock()
		cc := &conn{Conn: c, l: l, addr: a}
		if l.firstByte > 0 {
			cc.first = time.Now().Add(l.firstByte)
			c.SetReadDeadline(cc.first)
		}
		return cc, nil
	}
}

type conn struct {
	net.Conn
	l    *Listener
	addr netip.Addr
	once sync.Once

	mu        sync.Mutex
	first     time.Time // deadline for the first byte; zero once it came
	requested time.Time // the read deadline the server asked for
}

// SetReadDeadline applies the server's deadline, but never later than the
// first-byte deadline before the first byte has arrived.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requested = t
	return c.Conn.SetReadDeadline(c.effective())
}

// SetDeadline is SetReadDeadline and SetWriteDeadline.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// effective is the read deadline to apply; the caller holds c.mu.
func (c *conn) effective() time.Time {
	if c.first.IsZero() || (!c.requested.IsZero() && c.requested.Before(c.first)) {
		return c.requested
	}
	return c.first
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.first.IsZero() {
			c.first = time.Time{}
			c.Conn.SetReadDeadline(c.requested)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.byAddr[c.addr]--; c.l.byAddr[c.addr] <= 0 {
			delete(c.l.byAddr, c.addr)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
