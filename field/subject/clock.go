package subject

import (
	"sync/atomic"
	"time"
)

// clock tells the cache the time, in nanoseconds since the store opened.
// Reading the wall clock costs tens of nanoseconds on some virtual
// machines, as much as the rest of a cache hit; for a TTL of a second or
// more, a ticker refreshes a coarse reading every TTL/32 (at least every
// second), so that an entry lives at most the TTL plus one tick. Shorter
// TTLs read the monotonic clock on every call.
type clock struct {
	base   time.Time
	coarse atomic.Int64
	done   chan struct{} // closed when the store is collected; nil: no ticker
}

func newClock(ttl time.Duration) *clock {
	c := &clock{base: time.Now()}
	if ttl < time.Second {
		return c
	}
	tick := min(max(ttl/32, 10*time.Millisecond), time.Second)
	c.done = make(chan struct{})
	// The ticker holds the clock, never the store, so that the store can
	// be collected; its cleanup closes done.
	go func(base time.Time, coarse *atomic.Int64, done chan struct{}) {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				coarse.Store(int64(time.Since(base)))
			case <-done:
				return
			}
		}
	}(c.base, &c.coarse, c.done)
	return c
}

// now returns the time since the store opened: the coarse reading when a
// ticker keeps one, else a fresh monotonic one.
func (c *clock) now() int64 {
	if c.done != nil {
		// At most one tick behind the truth: entries live up to a tick longer.
		return c.coarse.Load()
	}
	return int64(time.Since(c.base))
}
