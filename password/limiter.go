package password

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/wardlab/ward/password/internal/argon2"
)

// LimiterConfig configures a Limiter. Zero fields take the defaults.
type LimiterConfig struct {
	// MaxInFlight is the number of cores hashing may occupy at once
	// (default: the number of CPUs; more only adds latency to every hash).
	// An Argon2 hash with p lanes occupies min(p, MaxInFlight) of them.
	MaxInFlight int
	// MemoryBudget caps the memory of the hashes in flight together with
	// the block memory kept for reuse, in bytes (default 256 MiB): it
	// bounds what hashing holds, busy or idle. A hash that alone exceeds
	// it is refused.
	MemoryBudget int64
	// MaxQueue is the most callers waiting; more get ErrBusy at once
	// (default 64 per in-flight slot).
	MaxQueue int
	// IdleRelease is how long unused block memory is kept for the next
	// hash before it is released (default 30 s).
	IdleRelease time.Duration
}

// Limiter bounds the hashing work in flight: memory-hard hashing is a
// denial-of-service vector, and unbounded goroutines make every request
// slow instead of some fast and some refused. It is shared by Hash and
// Verify, safe for concurrent use, and serves waiters in FIFO order.
//
// It also owns the block memory of Argon2 hashes: a hash borrows a buffer
// kept from an earlier hash instead of allocating and faulting in fresh
// memory, and returns it zeroed. Kept buffers count against MemoryBudget
// and are released after IdleRelease without use.
type Limiter struct {
	cfg LimiterConfig

	mu      sync.Mutex
	inUse   int64 // memory admitted to hashes in flight
	running int   // slots taken
	queue   []*waiter
	stats   LimiterStats
	pool    blockPool
	timer   *time.Timer // releases idle buffers
}

type waiter struct {
	mem   int64
	slots int
	ready chan struct{}
	buf   []argon2.Block // a kept buffer handed over at admission
}

// LimiterStats are a Limiter's counters.
type LimiterStats struct {
	InFlight   int           // slots taken now
	Queued     int           // callers waiting now
	Admitted   uint64        // hashes started
	Rejected   uint64        // callers refused with ErrBusy or too large
	Cancelled  uint64        // callers whose context ended while waiting
	TotalWait  time.Duration // summed time callers waited
	MaxWait    time.Duration
	PeakMemory int64 // most memory admitted at once
	MemoryUsed int64 // memory admitted now
	// PooledMemory is block memory kept idle for reuse now; Reused and
	// Allocated count the buffers hashes borrowed from the pool and the
	// ones that had to be allocated.
	PooledMemory        int64
	Reused, Allocated   uint64
	ReleasedIdleBuffers uint64
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
	if cfg.IdleRelease <= 0 {
		cfg.IdleRelease = 30 * time.Second
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
	s.InFlight, s.Queued, s.MemoryUsed, s.PooledMemory = l.running, len(l.queue), l.inUse, l.pool.bytes
	return s
}

func (l *Limiter) fits(w *waiter) bool {
	return l.running+w.slots <= l.cfg.MaxInFlight && l.inUse+w.mem <= l.cfg.MemoryBudget
}

// admit starts a hash. A kept buffer of exactly its size is handed over
// now, under the lock, so that no later release can drop it before the
// hash borrows it; if there is none, kept buffers are dropped until the
// memory admitted and kept fits the budget again.
func (l *Limiter) admit(w *waiter) {
	l.running += w.slots
	l.inUse += w.mem
	l.stats.Admitted++
	l.stats.PeakMemory = max(l.stats.PeakMemory, l.inUse)
	if w.mem%argon2.BlockSize == 0 {
		w.buf = l.pool.take(int(w.mem / argon2.BlockSize))
	}
	l.makeRoom()
}

// Acquire waits until a hash needing mem bytes may start on one core, and
// returns the function that releases it. It returns ErrBusy at once when
// the queue is full, and the context's error if it ends while waiting.
// Hash and Verify call it themselves; it is exported for callers that run
// other expensive work under the same budget.
func (l *Limiter) Acquire(ctx context.Context, mem int64) (release func(), err error) {
	ls, err := l.acquire(ctx, mem, 1)
	if err != nil {
		return nil, err
	}
	return ls.release, nil
}

// lease is one admitted hash: its memory and slots, and the block memory
// it borrowed.
type lease struct {
	l    *Limiter
	w    waiter
	buf  []argon2.Block
	used int // blocks handed out (and to be zeroed)
	once sync.Once
}

// acquire waits for slots cores (capped at MaxInFlight) and mem bytes.
func (l *Limiter) acquire(ctx context.Context, mem int64, slots int) (*lease, error) {
	w := waiter{mem: mem, slots: min(max(slots, 1), l.cfg.MaxInFlight), ready: make(chan struct{})}
	l.mu.Lock()
	if mem > l.cfg.MemoryBudget {
		l.stats.Rejected++
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: one hash needs %d bytes, over the %d-byte memory budget", ErrLimit, mem, l.cfg.MemoryBudget)
	}
	if len(l.queue) == 0 && l.fits(&w) {
		l.admit(&w)
		l.mu.Unlock()
		return &lease{l: l, w: w, buf: w.buf}, nil
	}
	if len(l.queue) >= l.cfg.MaxQueue {
		l.stats.Rejected++
		l.mu.Unlock()
		return nil, ErrBusy
	}
	l.queue = append(l.queue, &w)
	l.mu.Unlock()

	start := time.Now()
	select {
	case <-w.ready:
		l.recordWait(time.Since(start))
		return &lease{l: l, w: w, buf: w.buf}, nil
	case <-ctx.Done():
		l.mu.Lock()
		for i, q := range l.queue {
			if q == &w {
				l.queue = append(l.queue[:i], l.queue[i+1:]...)
				l.stats.Cancelled++
				l.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		l.mu.Unlock()
		// Admitted just as the context ended: give the slot back.
		<-w.ready
		(&lease{l: l, w: w, buf: w.buf}).release()
		return nil, ctx.Err()
	}
}

func (l *Limiter) recordWait(d time.Duration) {
	l.mu.Lock()
	l.stats.TotalWait += d
	l.stats.MaxWait = max(l.stats.MaxWait, d)
	l.mu.Unlock()
}

// blocks returns n blocks of memory for this hash: the kept buffer handed
// over at admission, or a new one. The memory is charged to the lease,
// which the limiter admitted, so the pool never outgrows the budget.
func (ls *lease) blocks(n int) []argon2.Block {
	if len(ls.buf) < n {
		ls.l.mu.Lock()
		ls.l.stats.Allocated++
		ls.l.mu.Unlock()
		ls.buf = make([]argon2.Block, n)
	} else {
		ls.l.mu.Lock()
		ls.l.stats.Reused++
		ls.l.mu.Unlock()
	}
	ls.used = n
	return ls.buf[:n]
}

// release zeroes the memory the hash used, keeps the buffer for the next
// hash, and wakes the waiters that now fit.
func (ls *lease) release() {
	ls.once.Do(func() {
		if ls.buf != nil {
			clear(ls.buf[:ls.used])
		}
		l := ls.l
		l.mu.Lock()
		l.running -= ls.w.slots
		l.inUse -= ls.w.mem
		if ls.buf != nil {
			l.pool.put(ls.buf, time.Now())
			l.armIdleTimer()
		}
		l.makeRoom()
		for len(l.queue) > 0 && l.fits(l.queue[0]) {
			w := l.queue[0]
			l.queue = l.queue[1:]
			l.admit(w)
			close(w.ready)
		}
		l.mu.Unlock()
	})
}

// makeRoom drops kept buffers (oldest first) while the memory admitted
// and the memory kept exceed the budget. The caller holds l.mu.
func (l *Limiter) makeRoom() {
	for l.pool.bytes > 0 && l.inUse+l.pool.bytes > l.cfg.MemoryBudget {
		l.pool.dropOldest()
		l.stats.ReleasedIdleBuffers++
	}
}

// armIdleTimer schedules the release of buffers idle for IdleRelease. The
// caller holds l.mu.
func (l *Limiter) armIdleTimer() {
	if l.timer != nil {
		return
	}
	l.timer = time.AfterFunc(l.cfg.IdleRelease, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.timer = nil
		l.stats.ReleasedIdleBuffers += uint64(l.pool.dropIdle(time.Now().Add(-l.cfg.IdleRelease)))
		if l.pool.bytes > 0 {
			l.armIdleTimer()
		}
	})
}

// blockPool keeps zeroed Argon2 block buffers for reuse.
type blockPool struct {
	bufs  []pooled // oldest first
	bytes int64
}

type pooled struct {
	buf  []argon2.Block
	idle time.Time
}

func (p *blockPool) put(buf []argon2.Block, now time.Time) {
	p.bufs = append(p.bufs, pooled{buf, now})
	p.bytes += int64(len(buf)) * argon2.BlockSize
}

// take removes and returns a kept buffer of exactly n blocks (the most
// recently used), or nil.
func (p *blockPool) take(n int) []argon2.Block {
	best := -1
	for i, b := range p.bufs {
		if len(b.buf) == n {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	buf := p.bufs[best].buf
	p.bufs = append(p.bufs[:best], p.bufs[best+1:]...)
	p.bytes -= int64(len(buf)) * argon2.BlockSize
	return buf
}

func (p *blockPool) dropOldest() {
	p.bytes -= int64(len(p.bufs[0].buf)) * argon2.BlockSize
	p.bufs[0] = pooled{}
	p.bufs = p.bufs[1:]
}

// dropIdle drops the buffers idle since before cutoff and returns how many.
func (p *blockPool) dropIdle(cutoff time.Time) int {
	n := 0
	for len(p.bufs) > 0 && p.bufs[0].idle.Before(cutoff) {
		p.dropOldest()
		n++
	}
	return n
}
