package conncap

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestCaps(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, Options{Total: 100, PerAddress: 3})
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var held []net.Conn
	for range 3 {
		held = append(held, <-accepted)
	}
	closed := 0
	for _, c := range clients {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			closed++
		}
	}
	if closed != 2 || l.Refused() != 2 {
		t.Fatalf("%d closed, %d refused; want the 2 over the per-address cap", closed, l.Refused())
	}
	held[0].Close()
	held[0].Close() // idempotent
	c, _ := net.Dial("tcp", raw.Addr().String())
	defer c.Close()
	select {
	case <-accepted:
	case <-time.After(2 * time.Second):
		t.Fatal("a slot freed by Close was not reused")
	}
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
				c.SetReadDeadline(start.Add(700 * time.Millisecond)) // the server's own, longer deadline
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
	if short > 400*time.Millisecond || long < 600*time.Millisecond {
		t.Fatalf("silent connection held %v, talking one %v", short, long)
	}
}
