package main

import (
	"time"

	"github.com/wardlab/ward/lab"
)

// typicalSeconds is how long each scenario took in a quick run on 2 AMD
// EPYC vCPUs (a fresh quick run, 2026-12-02, load average 1.3–1.7), and
// for the full profile the same times 7.4, the ratio of the two profiles'
// runs there (34 minutes against 4.6 of scenarios). The ETA scales the scenarios
// still to run by how this run has compared so far, so the machine's own
// speed matters less than their proportions.
var typicalSeconds = map[string][2]float64{
	"aead": {56, 414}, "password": {26, 192}, "kms": {7, 52}, "handshake": {116, 858},
	"tls": {51, 377}, "chat": {1, 7}, "migrate": {12, 89}, "subject": {6, 44},
	"jvm": {28, 282}, // measured 2026-12-06 on 2 Intel Xeon vCPUs (JMH forks a JVM per benchmark)
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
