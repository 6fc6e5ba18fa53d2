package main

import "runtime/debug"

// jobGCPercent is the collector's GOGC during a re-encryption job (ward
// encrypt-column, reseal, keyring rotate --db) when the user has not set
// GOGC. A job allocates per row and keeps only a batch live (a few MiB at
// the default 500 rows), so with Go's default of 100 the collector runs
// every few MiB of allocation: measured on 100k rows of ~200 B on a 2-core
// machine, 400 cut the job's CPU time to 0.76x on SQLite and 0.59x on
// PostgreSQL, for a peak RSS of 39–43 MiB instead of 28–29 MiB; 800 saved
// little more for 57–62 MiB (docs/OPERATIONS.md, "Jobs and memory").
const jobGCPercent = 400

// jobGC sets the collector for a job, unless GOGC is set in the
// environment (the user's choice stands), and returns what restores it.
func (a *app) jobGC() (restore func()) {
	if a.getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(jobGCPercent)
	return func() { debug.SetGCPercent(old) }
}
