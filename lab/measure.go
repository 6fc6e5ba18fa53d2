package lab

import (
	"context"
	"time"
)

// Sampling says how long and how often to measure an operation.
type Sampling struct {
	// Samples is the number of timed batches.
	Samples int
	// Target is the duration of one batch; the batch size is calibrated
	// to reach it.
	Target time.Duration
}

// QuickSampling and FullSampling are the profiles' defaults.
var (
	QuickSampling = Sampling{Samples: 7, Target: 15 * time.Millisecond}
	FullSampling  = Sampling{Samples: 21, Target: 60 * time.Millisecond}
)

// Measure runs op in calibrated batches and returns one sample per batch:
// nanoseconds per operation. op(n) must perform the operation n times.
// Medians of batch means are robust to the machine's noise; compare
// ratios measured in the same run.
func Measure(ctx context.Context, s Sampling, op func(n int) error) ([]float64, error) {
	n := 1
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := op(n); err != nil {
			return nil, err
		}
		el := time.Since(start)
		if el >= s.Target/4 || n >= 1<<30 {
			per := float64(el) / float64(n)
			n = max(1, int(float64(s.Target)/per))
			break
		}
		n *= 4
	}
	samples := make([]float64, 0, s.Samples)
	for range s.Samples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := op(n); err != nil {
			return nil, err
		}
		samples = append(samples, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	return samples, nil
}
