package password

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimiterBusyAndCancel(t *testing.T) {
	l := NewLimiter(LimiterConfig{MaxInFlight: 1, MemoryBudget: 100, MaxQueue: 1})
	ctx := context.Background()
	rel, err := l.Acquire(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	// One waiter fits in the queue; the next is refused at once.
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(wctx, 10)
		done <- err
	}()
	for l.Stats().Queued != 1 {
		runtime.Gosched()
	}
	if _, err := l.Acquire(ctx, 10); !errors.Is(err, ErrBusy) {
		t.Fatalf("full queue: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if _, err := l.Acquire(ctx, 1000); !errors.Is(err, ErrLimit) {
		t.Fatalf("over budget: %v", err)
	}
	rel()
	rel() // idempotent
	s := l.Stats()
	if s.InFlight != 0 || s.Queued != 0 || s.Rejected != 2 || s.Cancelled != 1 || s.Admitted != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestLimiterMemoryBudgetFIFO(t *testing.T) {
	l := NewLimiter(LimiterConfig{MaxInFlight: 10, MemoryBudget: 100, MaxQueue: 100})
	ctx := context.Background()
	r1, _ := l.Acquire(ctx, 60)
	var wg sync.WaitGroup
	for i, mem := range []int64{60, 10} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := l.Acquire(ctx, mem)
			if err != nil {
				t.Error(err)
				return
			}
			rel()
		}()
		for l.Stats().Queued != i+1 {
			runtime.Gosched()
		}
	}
	// The 10-byte caller would fit beside the first, but waits behind the
	// 60-byte head of the queue: no starvation of large hashes.
	time.Sleep(10 * time.Millisecond)
	if s := l.Stats(); s.InFlight != 1 || s.Queued != 2 {
		t.Fatalf("small waiter overtook the queue: %+v", s)
	}
	r1()
	wg.Wait()
	if s := l.Stats(); s.PeakMemory != 70 || s.Admitted != 3 {
		t.Fatalf("%+v", s)
	}
}

// TestThousandConcurrentVerifications fires 1,000 verifications of an
// OWASP (m=19456 KiB) hash at once and checks that the memory admitted
// never exceeds the budget and that the process's resident memory grows by
// no more than the budget plus 10%: the limiter's pool is the only block
// memory, reused from hash to hash.
func TestThousandConcurrentVerifications(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,000 Argon2id verifications")
	}
	const n = 1000
	perHash := OWASP().MemoryBytes()
	budget := 3 * perHash // memory, not MaxInFlight, is the binding limit
	l := NewLimiter(LimiterConfig{MaxInFlight: 8, MemoryBudget: budget, MaxQueue: n})
	h, err := NewHasher(Policy{}, l)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	enc, err := h.Hash(ctx, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	base := rss(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := rss(t); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	var fails atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.Verify(ctx, []byte("pw"), enc); err != nil {
				fails.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	st := l.Stats()
	grown := peak.Load() - base
	t.Logf("limiter: %+v; RSS peak %d MiB over a %d MiB base (budget %d MiB)", st, grown>>20, base>>20, budget>>20)
	if fails.Load() != 0 || st.Admitted != n+1 || st.Allocated > 3 {
		t.Fatalf("%d failures, %d admitted, %d buffers allocated", fails.Load(), st.Admitted, st.Allocated)
	}
	if st.PeakMemory > budget {
		t.Fatalf("admitted %d bytes at once, budget %d", st.PeakMemory, budget)
	}
	if grown > budget+budget/10 {
		t.Fatalf("RSS grew %d MiB, budget %d MiB + 10%%", grown>>20, budget>>20)
	}
}

// rss is the resident set size of this process, from /proc/self/statm.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
