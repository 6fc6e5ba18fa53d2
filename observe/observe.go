// Package observe is how ward reports what it does to whoever watches a
// process: each seal and open of a column's value, each call to a key
// service, each batch of a re-encryption job, each step of a rotation and
// each password hash. ward calls the process's [Observer] (none by
// default); contrib/otel turns the calls into OpenTelemetry metrics and
// traces. This package imports nothing outside the standard library, so
// the library never links a telemetry SDK.
//
// No call carries a value, a key's material, a password, a subject ID or
// a row key: only key IDs (public), column and table names, schemes,
// counts, durations and the kind of an error.
//
// Observer methods are called on ward's own paths (a seal calls
// [Observer.Value] before it returns), from many goroutines at once: they
// must be safe for concurrent use, fast, and never block.
package observe

import (
	"sync/atomic"
	"time"
)

// Observer hears what ward does.
type Observer interface {
	// Value: one value sealed or opened by a column (package field).
	Value(Value)
	// KMS: one call to a key service, or an envelope data key served
	// from the cache instead.
	KMS(KMSCall)
	// Job: one batch of a re-encryption job written (package field/reseal).
	Job(JobBatch)
	// Rotation: one step of a fleet rotation (package lifecycle).
	Rotation(RotationStep)
	// Hash: one password hashed or verified, or refused by the limiter
	// (package password).
	Hash(Hash)
}

// Op names what was done to a value.
type Op uint8

// Operations on values.
const (
	Seal Op = iota + 1
	Open
)

func (o Op) String() string {
	switch o {
	case Seal:
		return "seal"
	case Open:
		return "open"
	}
	return "unknown"
}

// Value is one seal or open.
type Value struct {
	Op Op
	// Key is the ID of the keyring key (of the subject key's version, for
	// Class "subject"), read from the ciphertext's header; 0 when the
	// value has none (a plaintext value of a column in mixed mode, a value
	// too short to hold one).
	Key uint32
	// Class is "keyring" (a keyring key, or a column's key derived from
	// one), "subject" (a subject's own key) or "plaintext" (mixed mode).
	Class string
	// ErrKind is "" for success, or the kind of the failure:
	// "wrong-context", "authentication", "unknown-key", "malformed",
	// "legacy-refused", "other".
	ErrKind string
}

// KMSCall is one call to a key service.
type KMSCall struct {
	// Provider and Op: "awskms", "Encrypt"; Op "cache-hit" is a data key
	// served from an envelope's cache, with no call (Duration 0).
	Provider, Op string
	Duration     time.Duration
	// ErrKind is "" for success, or the kms error's kind: "unavailable",
	// "throttled", "misconfigured", "unknown-key", "access-denied",
	// "invalid-ciphertext", "other".
	ErrKind string
}

// JobBatch is one batch of a job written.
type JobBatch struct {
	Table, Column string
	// Rows is what this batch wrote; Done and Total the job's pass so far
	// and the table's rows when the pass began.
	Rows, Done, Total int
	// Elapsed is the time since the job began: with Done and Total it
	// gives the rate and the time left.
	Elapsed time.Duration
}

// RotationStep is one step of a fleet rotation: "added", "held" (every
// process holds the new key), "promoted", "loaded" (every process loaded
// the promotion), "resealed".
type RotationStep struct {
	Step string
	// Waited is how long the step waited for the fleet.
	Waited time.Duration
}

// Hash is one password operation.
type Hash struct {
	// Op is "hash" or "verify"; Scheme the hash's scheme ("argon2id").
	Op, Scheme string
	Duration   time.Duration
	// Rejected: the limiter refused it (nothing computed).
	Rejected bool
}

var current atomic.Pointer[Observer]

// Set makes o the process's observer (nil: none) and returns the one
// before.
func Set(o Observer) Observer {
	var prev *Observer
	if o == nil {
		prev = current.Swap(nil)
	} else {
		prev = current.Swap(&o)
	}
	if prev == nil {
		return nil
	}
	return *prev
}

// Get returns the process's observer, or nil: one atomic load, what a
// seal pays when nobody observes.
func Get() Observer {
	if p := current.Load(); p != nil {
		return *p
	}
	return nil
}
