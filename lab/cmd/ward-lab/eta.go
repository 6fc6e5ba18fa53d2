package main

import (
	"time"

	"github.com/wardlab/ward/lab"
)

// typicalSeconds is how long each scenario took in a quick and a full run
// on the machine docs/LAB.md describes (2 vCPUs, idle): the ETA scales the
// scenarios still to run by how this run has compared so far.
var typicalSeconds = map[string][2]float64{
	"aead": {45, 140}, "password": {30, 95}, "kms": {8, 25}, "handshake": {115, 600},
	"tls": {55, 240}, "chat": {2, 6}, "migrate": {40, 180}, "subject": {30, 110},
}

// eta estimates what is left of a run.
type eta struct {
	left     []string
	quick    bool
	expected float64 // typical seconds of the scenarios done
	actual   float64 // their seconds in this run
}

func newETA(run []lab.Scenario, quick bool) *eta {
	e := &eta{quick: quick}
	for _, s := range run {
		e.left = append(e.left, s.Name())
	}
	return e
}

// typical is a scenario's typical duration in this run's profile (a
// minute for one the table does not know).
func (e *eta) typical(name string) float64 {
	t, ok := typicalSeconds[name]
	if !ok {
		return 60
	}
	if e.quick {
		return t[0]
	}
	return t[1]
}

// done records that a scenario took seconds and returns the estimate of
// what is left.
func (e *eta) done(name string, seconds float64) time.Duration {
	for i, n := range e.left {
		if n == name {
			e.left = append(e.left[:i], e.left[i+1:]...)
			break
		}
	}
	e.expected += e.typical(name)
	e.actual += seconds
	var rest float64
	for _, n := range e.left {
		rest += e.typical(n)
	}
	return time.Duration(rest * e.actual / e.expected * float64(time.Second))
}
