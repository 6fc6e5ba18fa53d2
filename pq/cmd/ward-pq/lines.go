package main

import (
	"fmt"
	"io"
	"sync"

	"golang.org/x/time/rate"
)

// lineLimiter writes at most perSecond log lines a second (bursts of
// twice that), and says how many it dropped: a flood of connections must
// not flood the log.
type lineLimiter struct {
	mu         sync.Mutex
	w          io.Writer
	lim        *rate.Limiter
	suppressed int
}

func newLineLimiter(w io.Writer, perSecond int) *lineLimiter {
	return &lineLimiter{w: w, lim: rate.NewLimiter(rate.Limit(perSecond), 2*perSecond)}
}

func (l *lineLimiter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lim.Allow() {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		fmt.Fprintf(l.w, "(%d log lines suppressed)\n", l.suppressed)
		l.suppressed = 0
	}
	fmt.Fprintf(l.w, format+"\n", args...)
}
