//go:build !linux

package lab

import "time"

// threadCPU is not read here: measurements fall back to wall time.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU is not read here: measurements fall back to wall time.
func processCPU() (time.Duration, bool) { return 0, false }
