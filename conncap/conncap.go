// Package conncap caps a listener's open connections in total and per
// client prefix, and how long a connection may wait before its first
// byte, so that clients that open sockets and then send nothing (or hold
// idle keep-alive connections) cannot lock anyone else out:
//
//   - a prefix (an IPv4 /24, an IPv6 /64: what one attacker easily has)
//     holds at most PerPrefix connections;
//   - when the listener is full, or a prefix is at its cap, the oldest idle
//     connection (no byte yet, or an HTTP keep-alive connection between
//     requests, see [Listener.ConnState]) is closed to admit the new one;
//     only when every connection is busy is the new one refused;
//   - a connection that stays silent is closed after FirstByte.
//
// The caps apply to direct peers: behind a reverse proxy, request-level
// limits must use the forwarded client address.
package conncap

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the caps. Zero means no cap.
type Options struct {
	// Total caps the open connections.
	Total int
	// PerPrefix caps the open connections of one client prefix: an IPv4
	// /24 or an IPv6 /64.
	PerPrefix int
	// FirstByte bounds the wait for a connection's first byte, whatever
	// read deadline the server sets before it.
	FirstByte time.Duration
}

// Listener wraps a net.Listener with caps.
type Listener struct {
	net.Listener
	total, perPrefix int
	firstByte        time.Duration

	mu       sync.Mutex
	open     map[*conn]struct{}
	byPrefix map[netip.Prefix]int
	refused  uint64
	evicted  uint64
}

// New wraps ln with the caps of o.
func New(ln net.Listener, o Options) *Listener {
	return &Listener{Listener: ln, total: o.Total, perPrefix: o.PerPrefix, firstByte: o.FirstByte,
		open: map[*conn]struct{}{}, byPrefix: map[netip.Prefix]int{}}
}

// Refused counts the connections closed on arrival because every slot
// they could take was busy.
func (l *Listener) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Evicted counts the idle connections closed to admit new ones.
func (l *Listener) Evicted() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.evicted
}

// Prefix is the group a remote address counts against: its /24 for IPv4,
// its /64 for IPv6.
func Prefix(c net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(c.String())
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := 24
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// Accept returns the next connection within the caps, evicting the oldest
// idle connection when a cap is reached, and closing the new one when
// every connection it could replace is busy.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &conn{Conn: c, l: l, prefix: Prefix(c.RemoteAddr())}
		cc.idleSince.Store(time.Now().UnixNano()) // idle until its first byte
		victims, ok := l.admit(cc)
		for _, v := range victims {
			v.Conn.Close()
		}
		if !ok {
			c.Close()
			continue
		}
		if l.firstByte > 0 {
			cc.first = time.Now().Add(l.firstByte)
			c.SetReadDeadline(cc.first)
		}
		return cc, nil
	}
}

// admit makes room for c, choosing the idle connections to close, and
// tracks c; it reports false when there is no room.
func (l *Listener) admit(c *conn) (victims []*conn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perPrefix > 0 && l.byPrefix[c.prefix] >= l.perPrefix {
		v := l.oldestIdle(func(o *conn) bool { return o.prefix == c.prefix })
		if v == nil {
			l.refused++
			return nil, false
		}
		l.untrack(v)
		victims = append(victims, v)
	}
	if l.total > 0 && len(l.open) >= l.total {
		v := l.oldestIdle(nil)
		if v == nil {
			l.refused++
			for _, v := range victims { // nothing was admitted: keep them
				l.track(v)
			}
			return nil, false
		}
		l.untrack(v)
		victims = append(victims, v)
	}
	l.evicted += uint64(len(victims))
	l.track(c)
	return victims, true
}

// oldestIdle returns the tracked idle connection idle the longest among
// those match accepts (nil: any); the caller holds l.mu.
func (l *Listener) oldestIdle(match func(*conn) bool) *conn {
	var best *conn
	var since int64
	for o := range l.open {
		s := o.idleSince.Load()
		if s == 0 || (match != nil && !match(o)) {
			continue
		}
		if best == nil || s < since {
			best, since = o, s
		}
	}
	return best
}

func (l *Listener) track(c *conn) {
	l.open[c] = struct{}{}
	l.byPrefix[c.prefix]++
	c.tracked = true
}

// untrack forgets c once; the caller holds l.mu.
func (l *Listener) untrack(c *conn) {
	if !c.tracked {
		return
	}
	c.tracked = false
	delete(l.open, c)
	if l.byPrefix[c.prefix]--; l.byPrefix[c.prefix] <= 0 {
		delete(l.byPrefix, c.prefix)
	}
}

// ConnState is an http.Server ConnState hook: it marks a keep-alive
// connection idle between requests, which makes it the first to go when a
// new client needs its slot, and busy while a request is read or served.
// Chain it with another hook if the server has one.
func (l *Listener) ConnState(c net.Conn, st http.ConnState) {
	if w, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = w.NetConn()
	}
	cc, ok := c.(*conn)
	if !ok {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		cc.idleSince.CompareAndSwap(0, time.Now().UnixNano())
	case http.StateActive:
		cc.idleSince.Store(0)
	}
}

type conn struct {
	net.Conn
	l      *Listener
	prefix netip.Prefix
	// idleSince is when the connection became idle (Unix ns), 0 while it
	// is busy: reading a first byte makes it busy; http.Server's states
	// move it back and forth (Listener.ConnState).
	idleSince atomic.Int64
	tracked   bool // guarded by l.mu

	started atomic.Bool // a first byte came

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
	if n > 0 && !c.started.Load() {
		c.started.Store(true)
		c.idleSince.Store(0) // a first byte: busy until a server says idle
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
	c.l.mu.Lock()
	c.l.untrack(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
