package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/time/rate"
)

// TestLineLimiter: a flood of log lines is cut to the rate, and the count
// of dropped lines is reported.
func TestLineLimiter(t *testing.T) {
	var b bytes.Buffer
	l := newLineLimiter(&b, 5)
	for i := range 1000 {
		l.printf("connection %d", i)
	}
	l.lim.SetLimit(rate.Inf) // let the next line through
	l.printf("after the flood")
	out := b.String()
	if n := strings.Count(out, "connection"); n > 11 {
		t.Fatalf("%d lines of 1000 written", n)
	}
	if !strings.Contains(out, "log lines suppressed)\nafter the flood") {
		t.Fatalf("%q", out)
	}
}
