package password

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// LimiterConfig configures a Limiter. Zero fields take the defaults.
type LimiterConfig struct {
	// MaxInFlight is the most hashes computed at once (default: the number
	// of CPUs; more only adds latency to every one of them).
	MaxInFlight int
	// MemoryBudget caps the memory of the hashes in flight, in bytes
	// (default 256 MiB). A hash that alone exceeds it is refused.
	MemoryBudget int64
	// MaxQueue is the most callers waiting; more get ErrBusy at once
	// (default 64 per in-flight slot).
	MaxQueue int
}

// Limiter bounds the hashing work in flight: memory-hard hashing is a
// denial-of-service vector, and unbounded goroutines make every request
// slow instead of some fast and some refused. It is shared by Hash and
// Verify, safe for concurrent use, and serves waiters in FIFO order.
type Limiter struct {
	cfg LimiterConfig

	mu      sync.Mutex
	inUse   int64
	running int
	queue   []*waiter
	stats   LimiterStats
}

type waiter struct {
	mem   int64
	ready chan struct{}
}

// LimiterStats are a Limiter's counters.
type LimiterStats struct {
	InFlight   int           // hashes running now
	Queued     int           // callers waiting now
	Admitted   uint64        // hashes started
	Rejected   uint64        // callers refused with ErrBusy or too large
	Cancelled  uint64        // callers whose context ended while waiting
	TotalWait  time.Duration // summed time callers waited
	MaxWait    time.Duration
	PeakMemory int64 // most memory admitted at once
	MemoryUsed int64 // memory admitted now
}

// NewLimiter returns a Limiter.
func NewLimiter(cfg LimiterConfig) *Limiter {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = runtime.NumCPU()
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 256 << 20
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 64 * cfg.MaxInFlight
	}
	return &Limiter{cfg: cfg}
}

// Config returns the effective configuration.
func (l *Limiter) Config() LimiterConfig { return l.cfg }

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() LimiterStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.InFlight, s.Queued, s.MemoryUsed = l.running, len(l.queue), l.inUse
	return s
}

func (l *Limiter) fits(mem int64) bool {
	return l.running < l.cfg.MaxInFlight && l.inUse+mem <= l.cfg.MemoryBudget
}

func (l *Limiter) admit(mem int64) {
	l.running++
	l.inUse += mem
	l.stats.Admitted++
	l.stats.PeakMemory = max(l.stats.PeakMemory, l.inUse)
}

// Acquire waits until mem bytes of hashing may start, and returns the
// function that releases them. It returns ErrBusy at once when the queue
// is full, and the context's error if it ends while waiting.
func (l *Limiter) Acquire(ctx context.Context, mem int64) (release func(), err error) {
	l.mu.Lock()
	if mem > l.cfg.MemoryBudget {
		l.stats.Rejected++
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: one hash needs %d bytes, over the %d-byte memory budget", ErrLimit, mem, l.cfg.MemoryBudget)
	}
	if len(l.queue) == 0 && l.fits(mem) {
		l.admit(mem)
		l.mu.Unlock()
		return l.releaser(mem), nil
	}
	if len(l.queue) >= l.cfg.MaxQueue {
		l.stats.Rejected++
		l.mu.Unlock()
		return nil, ErrBusy
	}
	w := &waiter{mem: mem, ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()

	start := time.Now()
	select {
	case <-w.ready:
		l.recordWait(time.Since(start))
		return l.releaser(mem), nil
	case <-ctx.Done():
		l.mu.Lock()
		for i, q := range l.queue {
			if q == w {
				l.queue = append(l.queue[:i], l.queue[i+1:]...)
				l.stats.Cancelled++
				l.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		l.mu.Unlock()
		// Admitted just as the context ended: give the slot back.
		<-w.ready
		l.releaser(mem)()
		return nil, ctx.Err()
	}
}

func (l *Limiter) recordWait(d time.Duration) {
	l.mu.Lock()
	l.stats.TotalWait += d
	l.stats.MaxWait = max(l.stats.MaxWait, d)
	l.mu.Unlock()
}

func (l *Limiter) releaser(mem int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.running--
			l.inUse -= mem
			// Wake waiters in order while the head fits.
			for len(l.queue) > 0 && l.fits(l.queue[0].mem) {
				w := l.queue[0]
				l.queue = l.queue[1:]
				l.admit(w.mem)
				close(w.ready)
			}
			l.mu.Unlock()
		})
	}
}
