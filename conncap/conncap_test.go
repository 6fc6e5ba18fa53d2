package conncap

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// server accepts on l and reads one byte of each connection (which makes
// it busy), handing each accepted connection over and signalling read
// after each byte read.
func server(t *testing.T, l *Listener) (accepted <-chan net.Conn, read <-chan struct{}) {
	acc, rd := make(chan net.Conn, 64), make(chan struct{}, 64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				if n, _ := c.Read(make([]byte, 1)); n > 0 {
					rd <- struct{}{}
				}
			}()
			acc <- c
		}
	}()
	t.Cleanup(func() { l.Close() })
	return acc, rd
}

// dial connects from a given loopback source address (127.x.y.z: each /24
// is a prefix; Linux routes all of 127.0.0.0/8 to lo), optionally sending
// a byte.
func dial(t *testing.T, to net.Addr, from string, speak bool) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", to.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if speak {
		c.Write([]byte("x"))
	}
	return c
}

// closedByServer reports whether the server closed c (EOF or reset)
// within a few seconds: a closing server returns at once, and a loaded
// machine (CI under the race detector) gets time.
func closedByServer(c net.Conn) bool { return closedWithin(c, 5*time.Second) }

// keptByServer reports whether c is still open after a short wait; a
// slow server cannot make it report a kept connection as closed.
func keptByServer(c net.Conn) bool { return !closedWithin(c, 300*time.Millisecond) }

func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestCaps: at a prefix's cap of busy connections a new one from that
// prefix is refused, while another prefix is served; a freed slot is
// reused.
func TestCaps(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, Options{Total: 100, PerPrefix: 3})
	accepted, read := server(t, l)
	var held []net.Conn
	for i := range 3 {
		dial(t, raw.Addr(), fmt.Sprintf("127.0.0.%d", 10+i), true)
		held = append(held, <-accepted)
		<-read // the server has read its byte: busy
	}
	over := []net.Conn{dial(t, raw.Addr(), "127.0.0.20", false), dial(t, raw.Addr(), "127.0.0.21", true)}
	other := dial(t, raw.Addr(), "127.0.1.5", false) // another /24
	<-accepted
	for i, c := range over {
		if !closedByServer(c) {
			t.Errorf("connection %d over the prefix's cap of busy connections was kept", i)
		}
	}
	if !keptByServer(other) || l.Refused() != 2 || l.Evicted() != 0 {
		t.Fatalf("refused %d, evicted %d", l.Refused(), l.Evicted())
	}
	held[0].Close()
	held[0].Close() // idempotent
	dial(t, raw.Addr(), "127.0.0.30", true)
	<-accepted // a slot freed by Close is reused
}

// TestEvictsOldestIdle: idle connections (no byte, or an HTTP keep-alive
// connection between requests) give way to new clients, oldest first,
// within a prefix and at the total; busy ones never do.
func TestEvictsOldestIdle(t *testing.T) {
	raw, _ := net.Listen("tcp", "127.0.0.1:0")
	l := New(raw, Options{Total: 4, PerPrefix: 2})
	accepted, read := server(t, l)
	a := dial(t, raw.Addr(), "127.0.2.1", false)
	<-accepted
	b := dial(t, raw.Addr(), "127.0.2.2", false)
	<-accepted
	dial(t, raw.Addr(), "127.0.2.3", true) // the prefix is full: the oldest idle (a) goes
	<-accepted
	<-read
	if aClosed := closedByServer(a); !aClosed || !keptByServer(b) || l.Evicted() != 1 {
		t.Fatalf("prefix: a closed %v, evicted %d", aClosed, l.Evicted())
	}
	// The total: b (idle) and the busy one from 127.0.2.x, two more busy.
	for _, from := range []string{"127.0.3.1", "127.0.4.1"} {
		dial(t, raw.Addr(), from, true)
		<-accepted
		<-read
	}
	late := dial(t, raw.Addr(), "127.0.5.1", true) // full: b, the only idle one, goes
	<-accepted
	<-read
	if !closedByServer(b) || !keptByServer(late) || l.Evicted() != 2 {
		t.Fatalf("total: evicted %d", l.Evicted())
	}
	refused := dial(t, raw.Addr(), "127.0.6.1", true) // all four busy
	if !closedByServer(refused) || l.Refused() != 1 {
		t.Fatalf("all busy: refused %d", l.Refused())
	}
}

// TestConnStateMarksKeepAlive: an HTTP connection between requests is idle
// and evictable; while a request runs it is busy.
func TestConnStateMarksKeepAlive(t *testing.T) {
	raw, _ := net.Listen("tcp", "127.0.0.1:0")
	l := New(raw, Options{PerPrefix: 1})
	c := &conn{l: l}
	l.ConnState(c, http.StateActive)
	if c.idleSince.Load() != 0 {
		t.Fatal("an active connection is idle")
	}
	l.ConnState(c, http.StateIdle)
	if c.idleSince.Load() == 0 {
		t.Fatal("a keep-alive connection between requests is busy")
	}
	raw.Close()
}

// TestFirstByte: a silent connection is dropped after FirstByte even when
// the server asked for a longer read deadline; one that speaks keeps the
// server's deadline.
func TestFirstByte(t *testing.T) {
	raw, _ := net.Listen("tcp", "127.0.0.1:0")
	l := New(raw, Options{FirstByte: 100 * time.Millisecond})
	defer l.Close()
	waited := make(chan time.Duration, 2)
	go func() {
		for range 2 {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				start := time.Now()
				c.SetReadDeadline(start.Add(2 * time.Second)) // the server's own, much longer deadline
				buf := make([]byte, 1)
				if _, err := c.Read(buf); err == nil {
					c.Read(buf) // after the first byte: until the server's deadline
				}
				waited <- time.Since(start)
			}()
		}
	}()
	silent, _ := net.Dial("tcp", raw.Addr().String())
	defer silent.Close()
	talker, _ := net.Dial("tcp", raw.Addr().String())
	defer talker.Close()
	talker.Write([]byte("x"))
	a, b := <-waited, <-waited
	short, long := min(a, b), max(a, b)
	if short > time.Second || long < 1900*time.Millisecond { // wide margins: a loaded CI machine
		t.Fatalf("silent connection held %v, talking one %v", short, long)
	}
}
