package lab

import (
	"context"
	"time"
)

// Sampling says how long and how often to measure an operation.
type Sampling struct {
	// Samples is the number of timed batches (rounds).
	Samples int
	// Target is the duration of one batch; the batch size is calibrated
	// to reach it.
	Target time.Duration
}

// QuickSampling and FullSampling are the profiles' defaults. The quick
// profile keeps enough rounds that its headline ratios land within 15% of
// the full profile's on the same machine (README, "The lab").
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
		start := time.Now()
		if err := op(n); err != nil {
			return 0, err
		}
		el := time.Since(start)
		if el >= s.Target/4 || n >= 1<<30 {
			per := float64(el) / float64(n)
			return max(1, int(float64(s.Target)/per)), nil
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
// calibrated batch of each, in order, so that they all see the machine in
// the same state (A B A B, not A A B B). It returns, per operation, one
// sample per round in nanoseconds per operation; sample i of every
// operation comes from round i, ready for PairedRatio.
func Interleave(ctx context.Context, s Sampling, ops ...func(n int) error) ([][]float64, error) {
	sizes := make([]int, len(ops))
	for i, op := range ops {
		var err error
		if sizes[i], err = calibrate(ctx, s, op); err != nil {
			return nil, err
		}
	}
	out := make([][]float64, len(ops))
	for range s.Samples {
		for i, op := range ops {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			start := time.Now()
			if err := op(sizes[i]); err != nil {
				return nil, err
			}
			out[i] = append(out[i], float64(time.Since(start).Nanoseconds())/float64(sizes[i]))
		}
	}
	return out, nil
}

// Milliseconds converts a duration to fractional milliseconds, the unit of
// the lab's times.
func Milliseconds(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
