package reseal

import (
	"context"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
)

// Census counts the values of a column, for a dry run: per key ID, per
// ciphertext version, how many are still bound without the column's bound
// columns, and how many are plaintext.
type Census struct {
	Rows      int
	Null      int
	Plaintext int // values that do not parse as ward ciphertexts
	// Damaged counts values that start as ciphertexts of this column's
	// keyring but do not parse (field.Column.Damaged): cut short by a
	// column too narrow or a non-strict MySQL server. They are never
	// plaintext: no job encrypts them, and the column is not done while
	// one is left. Restore each from a backup, or delete it.
	Damaged int
	// Suspect counts values that parse as ward ciphertexts but cannot be
	// this column's: their key is not in the keyring, or their context
	// check matches neither the current nor the v1 binding, or they name
	// a ciphertext version of a newer release ("w4:…"). Before a
	// column holding plaintext is migrated, each is plaintext that happens
	// to look like a ciphertext: fix those rows before turning on
	// [field.AcceptPlaintext], which would refuse them rather than show them.
	Suspect int
	PerKey  map[keyring.KeyID]int
	// PerVersion counts values per ciphertext format version.
	PerVersion map[uint8]int
	// LegacyBinding counts values whose context check matches the
	// context without bound columns rather than the column's bound columns (a column with
	// Bind).
	LegacyBinding int
	// Current counts values that need no work: under the primary key, in
	// the current version and binding.
	Current int
	// IndexMissing counts values that are current but lack their blind
	// index (a job with an index column fills it in).
	IndexMissing int
	// Width is the most the column holds as declared (characters for a
	// text column, bytes for a binary one; 0: unbounded, or SQLite, which
	// enforces none). Longest is what the longest value needs once
	// sealed in the column's encoding under the primary key, and TooLong
	// counts the values whose sealed form would exceed Width: the job
	// fails those rows ([ErrTooLong]) and writes the others; widen the
	// column to Longest first.
	Width, Longest int64
	TooLong        int
	// SubjectSealed counts values sealed under their subject's own key
	// (a column declared with field.PerSubject): current, whatever key
	// version they name; they are not in PerKey.
	SubjectSealed int
}

// valueState says what a stored value needs.
type valueState int

const (
	stateNull    valueState = iota
	stateCurrent            // up to date
	stateStale              // to re-seal: old key, version or binding
	statePlain              // not a ward ciphertext
	stateDamaged            // a ciphertext of this keyring cut short or damaged: never plaintext
	stateNewer              // a ciphertext of a newer release: never taken for plaintext
	stateIndex              // current, but its blind index is missing (Job.Index)
)

// classify looks at a stored value without decrypting it.
func (r *Job) classify(row dbRow, primary keyring.KeyID) (valueState, field.Ciphertext, keyring.KeyID) {
	if row.val == nil {
		return stateNull, field.Ciphertext{}, 0
	}
	var ct field.Ciphertext
	if err := ct.Scan(row.val); err != nil || ct.Err() != nil {
		if ct.Newer() {
			return stateNewer, ct, 0
		}
		if r.Column.Damaged(ct) {
			return stateDamaged, ct, 0
		}
		return statePlain, ct, 0
	}
	id, _ := ct.KeyID()
	if version, subject := keycore.SubjectKeyVersion(ct.Bytes()); subject && r.Column.PerSubject() {
		// Sealed under the subject's key: PerSubject columns bind, so the
		// value was sealed under the column's binding, and checking it
		// would need the subject's key. It is stale when the subject has a
		// newer key version (a subject-key rotation), not for its
		// ciphertext version alone: a private subject's values wait for
		// their user, and v3 binds as v4 does (ward subject rekey moves
		// them to v4).
		if r.olderThanSubject(row, version) {
			return stateStale, ct, id
		}
		if r.Index != nil && row.idx == nil {
			return stateIndex, ct, id
		}
		return stateCurrent, ct, id
	}
	if id != primary || ct.Version() != r.Column.WriteVersion() || r.Column.PerSubject() {
		return stateStale, ct, id
	}
	if r.Column.Bound() != nil && !r.bindingMatches(row, ct, false) {
		return stateStale, ct, id
	}
	if r.Index != nil && row.idx == nil {
		return stateIndex, ct, id
	}
	return stateCurrent, ct, id
}

// currentVersioner is what a subject-key store tells a job: the version
// new values of a subject are sealed under (field/subject.Store).
type currentVersioner interface {
	CurrentVersion(subject string) (uint32, error)
}

// olderThanSubject reports whether a value under subject key version is
// older than its subject's current version. A subject whose version
// cannot be read (forgotten, user-held rows are still read; a missing key)
// is left alone: the value's own open says why.
func (r *Job) olderThanSubject(row dbRow, version uint32) bool {
	cv, ok := r.Column.SubjectKeys().(currentVersioner)
	if !ok {
		return false
	}
	rk, err := row.rowKey()
	if err != nil {
		return false
	}
	subject, err := r.Column.Subject(rk)
	if err != nil {
		return false
	}
	cur, err := cv.CurrentVersion(subject)
	if err != nil || cur <= version {
		return false
	}
	// A private subject's older versions are theirs too: only their own
	// log-in can move those values (Job.Subject with their keys), so a
	// table-wide job counts them as they are, not as work left.
	if uh, ok := r.Column.SubjectKeys().(userHeldChecker); ok {
		if held, err := uh.UserHeld(subject); err != nil || held {
			return false
		}
	}
	return true
}

// userHeldChecker is what a subject-key store tells a job: whether a
// subject's keys are held by the user (field/subject.Store).
type userHeldChecker interface {
	UserHeld(subject string) (bool, error)
}

// bindingMatches reports whether the value's context check matches the
// context it was sealed under for its row (by its version), or, with
// legacy, the context without bound columns.
func (r *Job) bindingMatches(row dbRow, ct field.Ciphertext, legacy bool) bool {
	rk, err := row.rowKey()
	if err != nil {
		return false
	}
	bound, unbound := r.Column.Matches(rk, ct)
	if legacy {
		return unbound
	}
	return bound
}

// Count is the dry run: it reads the column (this shard) and counts
// values per key ID, version, binding and plaintext without decrypting or
// writing anything.
func (r *Job) Count(ctx context.Context) (Census, error) {
	q, err := r.queries(ctx)
	if err != nil {
		return Census{}, err
	}
	c := Census{PerKey: map[keyring.KeyID]int{}, PerVersion: map[uint8]int{}, Width: q.width}
	primary := r.Column.Keyring().Primary().ID
	err = r.scan(ctx, q, func(rows []dbRow) error {
		for _, row := range rows {
			c.Rows++
			st, ct, id := r.classify(row, primary)
			c.size(r.needs(row, st, ct))
			switch st {
			case stateNull:
				c.Null++
				continue
			case statePlain:
				c.Plaintext++
				continue
			case stateDamaged:
				c.Damaged++
				continue
			case stateNewer:
				c.Suspect++
				continue
			case stateCurrent:
				c.Current++
			case stateIndex:
				c.IndexMissing++
			}
			if _, subject := keycore.SubjectKeyVersion(ct.Bytes()); subject {
				c.SubjectSealed++
				c.PerVersion[ct.Version()]++
				continue
			}
			c.PerKey[id]++
			c.PerVersion[ct.Version()]++
			r.countBinding(&c, row, ct, id)
		}
		return nil
	})
	return c, err
}

// size counts what a value needs once sealed against the column's width.
func (c *Census) size(n int64) {
	c.Longest = max(c.Longest, n)
	if c.Width > 0 && n > c.Width {
		c.TooLong++
	}
}

// needs is the size a value takes once sealed into the column (0 for
// NULL, a damaged value and a newer release's): its plaintext's length,
// read from a ciphertext's header, plus the primary key's overhead, in
// the column's encoding.
func (r *Job) needs(row dbRow, st valueState, ct field.Ciphertext) int64 {
	var n int
	switch st {
	case stateNull, stateDamaged, stateNewer:
		return 0
	case statePlain:
		n = int(valueSize(row.val))
	default:
		pt, err := keycore.PlaintextSize(ct.Bytes())
		if err != nil {
			return 0
		}
		n = pt
	}
	return int64(r.Column.SealedSize(n))
}

// countBinding sorts a ciphertext that is not current by what its
// context check matches.
func (r *Job) countBinding(c *Census, row dbRow, ct field.Ciphertext, id keyring.KeyID) {
	if _, ok := r.Column.Keyring().Lookup(id); !ok {
		c.Suspect++
		return
	}
	switch {
	case r.bindingMatches(row, ct, false):
	case r.Column.Bound() != nil && r.bindingMatches(row, ct, true):
		c.LegacyBinding++
	default:
		c.Suspect++
	}
}

// Done reports whether the census found nothing left to do: no plaintext,
// no damaged or suspect value, everything current.
func (c Census) Done() bool {
	return c.Plaintext == 0 && c.Damaged == 0 && c.Suspect == 0 && c.Current == c.Rows-c.Null
}
