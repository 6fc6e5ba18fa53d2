package lab

import (
	"context"
	"runtime"
	"time"
)

// Sampling says how long and how often to measure an operation.
type Sampling struct {
	// Samples is the number of timed batches (rounds).
	Samples int
	// Target is the duration of one batch; the batch size is calibrated
	// to reach it.
	Target time.Duration
	// Clock is what a batch's time is read from.
	Clock Clock
}

// Clock is what a measurement reads a batch's time from.
type Clock int

const (
	// Wall is elapsed time: for work that waits on something else (the
	// network, a database, another process, other goroutines).
	Wall Clock = iota
	// ThreadCPU is the CPU time of the measuring thread alone (the
	// goroutine is locked to it): for work done on that thread and
	// nothing else, which a shared machine's other load then does not
	// count against (docs/LAB.md, "How the lab measures").
	ThreadCPU
	// ProcessCPU is the CPU time of the whole process, every thread: for
	// work that runs on goroutines of its own or allocates what the
	// collector's workers then reclaim (x/crypto's Argon2, a hash per
	// lane), measured in a process that does nothing else meanwhile.
	ProcessCPU
)

// Read is the clock's reading now. The CPU clocks fall back to elapsed
// time where the system cannot read them.
func (c Clock) Read() time.Duration { return now(c) }

// CPU is s for in-process work on one thread: its thread's CPU time, over
// four times as many batches, each a tenth as long: many short batches
// whose fastest and median a busy neighbour disturbs least.
func (s Sampling) CPU() Sampling {
	return Sampling{Samples: 4*s.Samples + 1, Target: s.Target / 10, Clock: ThreadCPU}
}

// QuickSampling and FullSampling are the profiles' defaults. The quick
// profile keeps enough rounds that its headline ratios land within 15% of
// the full profile's on the same machine (docs/LAB.md, "Quick vs full").
var (
	QuickSampling = Sampling{Samples: 11, Target: 20 * time.Millisecond}
	FullSampling  = Sampling{Samples: 21, Target: 60 * time.Millisecond}
)

// calibrate runs op until a batch takes a quarter of the target (which
// also warms it up: caches, branch predictors, the JIT of the mind) and
// returns the batch size that takes about the target.
func calibrate(ctx context.Context, s Sampling, op func(n int) error) (int, error) {
	n := 1
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start, wall := now(s.Clock), time.Now()
		if err := op(n); err != nil {
			return 0, err
		}
		el := now(s.Clock) - start
		// An operation that spends its time waiting costs its thread
		// little CPU: the wall clock bounds the calibration too.
		if el >= s.Target/4 || time.Since(wall) >= s.Target || n >= 1<<30 {
			per := max(float64(el), 1) / float64(n)
			return max(1, min(int(float64(s.Target)/per), n*4)), nil
		}
		n *= 4
	}
}

// Measure runs op in calibrated batches, after a warm-up, and returns one
// sample per batch: nanoseconds per operation. op(n) must perform the
// operation n times.
func Measure(ctx context.Context, s Sampling, op func(n int) error) ([]float64, error) {
	rounds, err := Interleave(ctx, s, op)
	if err != nil {
		return nil, err
	}
	return rounds[0], nil
}

// Interleave measures several operations in rounds: every round runs one
// calibrated batch of each, so that they all see the machine in the same
// state (A B A B, not A A B B), in alternating order (A B, then B A: no
// operation always runs first, or always after another's garbage). It
// returns, per operation, one sample per round in nanoseconds per
// operation; sample i of every operation comes from round i, ready for
// PairedRatio. With ThreadCPU the goroutine is locked to its thread.
func Interleave(ctx context.Context, s Sampling, ops ...func(n int) error) ([][]float64, error) {
	if s.Clock == ThreadCPU {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	sizes := make([]int, len(ops))
	for i, op := range ops {
		var err error
		if sizes[i], err = calibrate(ctx, s, op); err != nil {
			return nil, err
		}
	}
	out := make([][]float64, len(ops))
	for round := range s.Samples {
		for j := range ops {
			i := j
			if round%2 == 1 {
				i = len(ops) - 1 - j
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			start := now(s.Clock)
			if err := ops[i](sizes[i]); err != nil {
				return nil, err
			}
			out[i] = append(out[i], float64((now(s.Clock)-start).Nanoseconds())/float64(sizes[i]))
		}
	}
	return out, nil
}

// epoch makes Wall readings durations too.
var epoch = time.Now()

// now reads the clock: elapsed time since the lab started, or the
// thread's or the process's CPU time.
func now(c Clock) time.Duration {
	switch c {
	case ThreadCPU:
		if d, ok := threadCPU(); ok {
			return d
		}
	case ProcessCPU:
		if d, ok := processCPU(); ok {
			return d
		}
	}
	return time.Since(epoch)
}

// Milliseconds converts a duration to fractional milliseconds, the unit of
// the lab's times.
func Milliseconds(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
