package handshake

import (
	"context"
	"errors"
	"net"
	"sync"
)

// DefaultMaxConns bounds concurrent handshakes in Serve.
const DefaultMaxConns = 256

// Serve accepts connections on ln and runs a server handshake on each, at
// most maxConns at a time (DefaultMaxConns if 0; further connections wait
// in the kernel's backlog). Each handshake is bounded by cfg.Timeout, so a
// stalled client holds its slot only that long. done, if not nil, is
// called with each result and the connection, which it must close. Serve
// returns when ctx ends or ln fails, after every handshake has finished.
func Serve(ctx context.Context, ln net.Listener, cfg *ServerConfig, maxConns int, done func(net.Conn, *Result, error)) error {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, maxConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		c, err := ln.Accept()
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
