package handshake

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/wardlab/ward/internal/conncap"
)

// Defaults of ServeOptions.
const (
	DefaultMaxConns           = 256
	DefaultMaxConnsPerAddress = 16
)

// ServeOptions bound what clients can hold of a server.
type ServeOptions struct {
	// MaxConns bounds concurrent handshakes (default DefaultMaxConns);
	// further connections wait in the kernel's backlog.
	MaxConns int
	// MaxConnsPerAddress bounds the concurrent handshakes of one remote
	// address (IPv6: one /64), default DefaultMaxConnsPerAddress; a
	// connection over it is closed at once.
	MaxConnsPerAddress int
}

// Serve accepts connections on ln and runs a server handshake on each,
// within opts' caps. Each ClientHello must arrive within
// cfg.HelloTimeout and each handshake finish within cfg.Timeout, so an
// idle or stalled client holds its slot only that long, and one address
// holds at most MaxConnsPerAddress slots. done, if not nil, is called with
// each result and the connection, which it must close. Serve returns when
// ctx ends or ln fails, after every handshake has finished.
func Serve(ctx context.Context, ln net.Listener, cfg *ServerConfig, opts ServeOptions, done func(net.Conn, *Result, error)) error {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxConnsPerAddress <= 0 {
		opts.MaxConnsPerAddress = DefaultMaxConnsPerAddress
	}
	capped := conncap.New(ln, conncap.Options{PerAddress: opts.MaxConnsPerAddress})
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, opts.MaxConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		c, err := capped.Accept()
		if err != nil {
			<-slots
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
			defer func() { <-slots }()
			res, err := Server(ctx, c, cfg)
			if done != nil {
				done(c, res, err)
				return
			}
			c.Close()
		}()
	}
}
