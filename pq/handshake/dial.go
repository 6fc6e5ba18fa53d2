package handshake

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Family names a suite's family as the post-quantum field report's CSV
// did: "x25519", "mlkem", "hybrid" or "signed".
func (s Suite) Family() string {
	switch {
	case s.Sig != SigNone:
		return "signed"
	case s.KEX == X25519:
		return "x25519"
	case s.KEX.HasX25519():
		return "hybrid"
	}
	return "mlkem"
}

// Mechanism names a suite's primitives, such as "X25519+ML-KEM-768" or
// "ML-KEM-768+ML-DSA-65".
func (s Suite) Mechanism() string {
	var m string
	switch lvl := s.KEX.MLKEMLevel(); {
	case lvl == 0:
		m = "X25519"
	case s.KEX.HasX25519():
		m = "X25519+ML-KEM-" + strconv.Itoa(lvl)
	default:
		m = "ML-KEM-" + strconv.Itoa(lvl)
	}
	switch s.Sig {
	case MLDSA44:
		m += "+ML-DSA-44"
	case MLDSA65:
		m += "+ML-DSA-65"
	case MLDSA87:
		m += "+ML-DSA-87"
	}
	return m
}

// Dialed is one client handshake as measured by [Dial].
type Dialed struct {
	// Connect is the TCP connection's set-up time, before the handshake.
	Connect time.Duration
	// Result is the client's result; Result.Stats.Confirmed is the time
	// to a confirmed key.
	Result *Result
}

// Dial connects to addr over TCP and runs one client handshake, timing
// the connection apart from the handshake, and closes the connection.
// wrap, when not nil, wraps the connection first (a link model, say).
func Dial(ctx context.Context, addr string, cfg *ClientConfig, wrap func(net.Conn) net.Conn) (Dialed, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	start := time.Now()
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return Dialed{}, fmt.Errorf("handshake: dialing %s: %w", addr, err)
	}
	defer c.Close()
	d := Dialed{Connect: time.Since(start)}
	if wrap != nil {
		c = wrap(c)
	}
	if d.Result, err = Client(ctx, c, cfg); err != nil {
		return Dialed{}, err
	}
	return d, nil
}
