package handshake

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/wardlab/ward/conncap"
)

// Defaults of ServeOptions.
const (
	DefaultMaxConns           = 8192
	DefaultMaxConnsPerAddress = 64
)

// ServeOptions bound what clients can hold of a server.
type ServeOptions struct {
	// MaxConns bounds open connections (default DefaultMaxConns). When it
	// is reached, the connection that has waited longest without sending
	// its ClientHello is closed to admit a new one; only when every
	// connection is mid-handshake is the new one refused.
	MaxConns int
	// MaxConnsPerAddress bounds the connections of one client prefix (an
	// IPv4 /24, an IPv6 /64), default DefaultMaxConnsPerAddress, with the
	// same eviction within the prefix.
	MaxConnsPerAddress int
}

// Serve accepts connections on ln and runs a server handshake on each,
// within opts' caps. Each ClientHello must arrive within
// cfg.HelloTimeout and each handshake finish within cfg.Timeout, so an
// idle or stalled client holds its slot only that long, and idle ones are
// the first to go when a new client needs the room (package conncap).
// done, if not nil, is called with each result and the connection, which
// it must close. Serve returns when ctx ends or ln fails, after every
// handshake has finished.
func Serve(ctx context.Context, ln net.Listener, cfg *ServerConfig, opts ServeOptions, done func(net.Conn, *Result, error)) error {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxConnsPerAddress <= 0 {
		opts.MaxConnsPerAddress = DefaultMaxConnsPerAddress
	}
	capped := conncap.New(ln, conncap.Options{Total: opts.MaxConns, PerPrefix: opts.MaxConnsPerAddress})
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := capped.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Server(ctx, c, cfg)
			if done != nil {
				done(c, res, err)
				return
			}
			c.Close()
		}()
	}
}
