//go:build !unix

package main

import "os"

// lockFile does nothing where flock is not available.
func lockFile(*os.File) error { return nil }

// inUse cannot tell where flock is not available: a pending grant is
// settled as if no command were writing it (run one grant command at a
// time there).
func inUse(string) bool { return false }

// canLock says whether lockFile locks: only then may a grant command take
// over an empty grant file a killed one left (takeOut).
const canLock = false
