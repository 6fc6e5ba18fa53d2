package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wardlab/ward/conncap"
)

// Timeouts of the HTTP server: a client that trickles its headers or body,
// or does not read the answer, is cut off.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	keyringPoll       = 5 * time.Second  // how often Serve re-reads the keyring file
	fleetHeartbeat    = 2 * time.Second  // how often Serve reports the keys it holds (package fleet)
	drainTimeout      = 10 * time.Second // how long requests in flight may finish after a stop
)

// Serve listens on ln and serves until ctx ends. Connections are capped in
// total and per client address, every phase of a request has a deadline,
// expired sessions are swept every minute, and SIGHUP reloads the keyring
// from disk (a rotation saved by 'ward-chat rotate', or a copy
// distributed from another host) and re-encrypts what is not under its
// primary key.
func (s *Service) Serve(ctx context.Context, ln net.Listener, out io.Writer) error {
	l := s.server.limits
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// When ctx ends (SIGTERM, Ctrl-C), requests in flight finish within
	// drainTimeout (a request's transaction commits or rolls back, never
	// half done), then the process leaves the fleet (below).
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		drain, stop := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
		defer stop()
		if err := hs.Shutdown(drain); err != nil {
			hs.Close()
		}
	}()
	go s.sweep(ctx)
	// Registered in the database since Open (joinFleet), so that a fleet
	// rotation (ward keyring rotate --db) waits until this process holds a
	// new key before it is promoted; a clean exit leaves the registry.
	defer s.member.Leave(context.WithoutCancel(ctx))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := s.Reload(ctx, out); err != nil {
					fmt.Fprintln(out, "ward-chat: reload:", err)
				}
			}
		}
	}()
	fmt.Fprintf(out, "ward chat on http://%s/ (keyring %s, primary key %v)\n", ln.Addr(), s.kr.ID(), s.kr.Primary().ID)
	capped := conncap.New(ln, conncap.Options{Total: l.MaxConns, PerPrefix: l.MaxConnsPerAddress})
	hs.ConnState = capped.ConnState // idle keep-alive connections make room first
	err := hs.Serve(capped)
	if errors.Is(err, http.ErrServerClosed) {
		<-drained // Serve returns at once; the requests in flight finish first
		return nil
	}
	return err
}

func (s *Service) sweep(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.SweepSessions(ctx); err != nil {
				s.log.Error("session sweep", "err", err)
			} else if n > 0 {
				s.log.Info("expired sessions swept", "count", n)
			}
		}
	}
}
