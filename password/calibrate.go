package password

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"time"

	"github.com/wardlab/ward/password/internal/argon2"
)

// Calibration is the outcome of Calibrate.
type Calibration struct {
	// Params are the proposed Argon2id parameters.
	Params Params
	// Median is the measured median time of one hash with Params.
	Median time.Duration
	// Tried lists every configuration measured, in order.
	Tried []CalibrationStep
}

// CalibrationStep is one measured configuration.
type CalibrationStep struct {
	Params Params
	Median time.Duration
}

// Calibrate measures this machine and proposes Argon2id parameters that
// take about target per hash: as much memory as maxMemoryKiB allows (memory
// is what makes guessing costly on GPUs), then as many passes as fit. If
// even one pass at maxMemoryKiB is slower than target, memory is halved
// until it fits, but never below OWASP's smallest option; the result is
// then slower than target. Parallelism is 1, which keeps one hash on one
// core so that concurrent log-ins scale with cores.
func Calibrate(ctx context.Context, target time.Duration, maxMemoryKiB uint32) (Calibration, error) {
	if target <= 0 || maxMemoryKiB < minArgon2Memory {
		return Calibration{}, errors.New("password: calibrate needs a positive target and at least 7168 KiB")
	}
	var c Calibration
	mem := make([]argon2.Block, maxMemoryKiB+3) // reused, as the limiter's pool would
	defer clear(mem)
	hash := func(pw, salt []byte, p Params) {
		argon2.Key(pw, salt, argon2.Params{Variant: argon2.Argon2id, Time: p.Time, Memory: p.Memory, Lanes: 1, KeyLen: 32}, mem)
	}
	measure := func(p Params) (time.Duration, error) {
		salt := make([]byte, 16)
		rand.Read(salt)
		var ds []time.Duration
		for range 3 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			start := time.Now()
			hash([]byte("calibration"), salt, p)
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		c.Tried = append(c.Tried, CalibrationStep{p, ds[1]})
		return ds[1], nil
	}
	p := Params{Scheme: Argon2id, Memory: maxMemoryKiB, Time: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}
	// Warm up: the first hash pays for faulting fresh pages in.
	hash([]byte("warm-up"), make([]byte, 16), p)
	d, err := measure(p)
	if err != nil {
		return c, err
	}
	for d > target && p.Memory/2 >= minArgon2Memory {
		p.Memory /= 2
		if d, err = measure(p); err != nil {
			return c, err
		}
	}
	// Time is roughly linear in passes: estimate, then confirm.
	if d < target {
		per := d
		t := uint32(target / per)
		if t > 1 {
			p.Time = min(t, DefaultLimits().MaxArgon2Time)
			if d, err = measure(p); err != nil {
				return c, err
			}
			for d > target && p.Time > 1 {
				p.Time--
				if d, err = measure(p); err != nil {
					return c, err
				}
			}
		}
	}
	// Meet OWASP's minimum memory x time even if that overshoots target.
	for uint64(p.Memory)*uint64(p.Time) < minArgon2MemTime {
		p.Time++
		if d, err = measure(p); err != nil {
			return c, err
		}
	}
	c.Params, c.Median = p, d
	return c, nil
}
