package main

import (
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/scenarios"
)

// TestETA: the estimate of what is left scales the typical durations of
// the scenarios still to run by how this run compares with them.
func TestETA(t *testing.T) {
	var run []lab.Scenario
	for _, s := range scenarios.All() {
		if s.Name() == "aead" || s.Name() == "kms" || s.Name() == "chat" {
			run = append(run, s)
		}
	}
	e := newETA(run, true)
	// aead took twice its typical time: kms and chat should too.
	got := e.done("aead", 2*typicalSeconds["aead"][0])
	want := time.Duration(2 * (typicalSeconds["kms"][0] + typicalSeconds["chat"][0]) * float64(time.Second))
	if got != want {
		t.Fatalf("left after aead: %v, want %v", got, want)
	}
	e.done("kms", 1)
	if left := e.done("chat", 1); left != 0 {
		t.Fatalf("left after the last scenario: %v", left)
	}
}
