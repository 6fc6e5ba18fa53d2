//go:build race

package field

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts mean nothing under it.
const raceEnabled = true
