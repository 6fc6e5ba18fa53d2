package main

import (
	"runtime/debug"
	"testing"
)

// TestJobGC: a job loosens the collector to jobGCPercent and puts it back
// after; a GOGC in the environment is left as the user set it.
func TestJobGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	a := &app{getenv: func(string) string { return "" }}
	restore := a.jobGC()
	if got := debug.SetGCPercent(jobGCPercent); got != jobGCPercent {
		t.Fatalf("during a job GOGC is %d, want %d", got, jobGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after a job GOGC is %d, want 100 back", got)
	}
	a.getenv = func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}
	restore = a.jobGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, a job changed the collector to %d", got)
	}
	restore()
}
