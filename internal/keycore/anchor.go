package keycore

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// Anchors and state keys.
//
// A database can hold state whose deletion or replay matters: which keys
// its values use, the highest keyring generation it has seen, that a
// migration ran. A MAC proves what such a row says, not that the row is
// there, so a keyring keeps, for every database it serves, an [Anchor]: a
// short record inside the sealed keyring file (under the same lock,
// compare-and-swap and authentication as the keys) of the newest state the
// database was known to hold. Package field writes and checks it
// ([ledger.Ledger]); a database whose state is missing or older than its
// anchor is refused.
//
// State in a database is authenticated with StateMAC, under a
// state key. A keyring gets a fresh state key with every change of its
// keys and keeps the older ones, so it can verify state written before a
// change, while a copy of the keyring file from before a change lacks the
// newer state keys: an old file cannot forge state a newer keyring accepts.

// maxAnchors caps how many databases one keyring file anchors.
const maxAnchors = 4096

// maxMarks caps the marks of one anchor.
const maxMarks = 64

// Anchor is what a keyring file remembers about one database's state.
type Anchor struct {
	// Counter is the state counter last written to the database; its state
	// is refused if it is lower.
	Counter uint64 `json:"counter"`
	// Epoch is the state key the database's state was last MAC'd under; its
	// state is refused if MAC'd under an older one.
	Epoch uint64 `json:"epoch"`
	// Marks are named facts that must survive deletion from the database
	// (a migration ran, legacy forms are refused), sorted.
	Marks []string `json:"marks,omitempty"`
	// Counters are named counts that never go backwards (the subjects
	// forgotten in a namespace), each the highest recorded: a recovery
	// after the database went back in time knows how many it lost.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// Tallies name what some counters count (the forgotten subjects'
	// identities, by keyed hash), each the one of the highest count
	// recorded: a recovery tells which forgets the database lost, not
	// only how many.
	Tallies map[string]Tally `json:"tallies,omitempty"`
	// Columns name the columns ("table.column") values were sealed into,
	// each kept once recorded: a recovery knows which may have reverted.
	Columns []string `json:"columns,omitempty"`
}

// maxCounters and maxColumns cap an anchor's counters and columns, and
// maxAnchorName the length of a counter's or column's name.
const (
	maxCounters   = 256
	maxColumns    = 1024
	maxAnchorName = 512
)

// valid reports whether an anchor stays within its caps, with its marks
// and columns sorted.
func (a Anchor) valid() bool {
	if len(a.Marks) > maxMarks || !slices.IsSorted(a.Marks) || len(a.Counters) > maxCounters ||
		len(a.Tallies) > maxCounters || len(a.Columns) > maxColumns || !slices.IsSorted(a.Columns) {
		return false
	}
	for name := range a.Counters {
		if len(name) > maxAnchorName {
			return false
		}
	}
	for name, t := range a.Tallies {
		if len(name) > maxAnchorName || !t.Valid() {
			return false
		}
	}
	return !slices.ContainsFunc(a.Columns, func(c string) bool { return len(c) > maxAnchorName })
}

// merge returns a moved forward by b: b's counter and epoch, the union of
// marks and columns, the higher of each counter, and of each tally the
// one of the higher count.
func (a Anchor) merge(b Anchor) Anchor {
	out := Anchor{Counter: b.Counter, Epoch: b.Epoch, Marks: union(a.Marks, b.Marks), Columns: union(a.Columns, b.Columns)}
	if len(a.Counters)+len(b.Counters) > 0 {
		out.Counters = maps.Clone(a.Counters)
		if out.Counters == nil {
			out.Counters = map[string]uint64{}
		}
		for name, n := range b.Counters {
			out.Counters[name] = max(out.Counters[name], n)
		}
	}
	if len(a.Tallies)+len(b.Tallies) > 0 {
		out.Tallies = maps.Clone(a.Tallies)
		if out.Tallies == nil {
			out.Tallies = map[string]Tally{}
		}
		for name, t := range b.Tallies {
			if t.Count > out.Tallies[name].Count {
				out.Tallies[name] = t
			}
		}
	}
	return out
}

// union returns the sorted union of two sorted lists, nil when both are
// empty.
func union(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// equal reports whether two anchors record the same.
func (a Anchor) equal(b Anchor) bool {
	return a.Counter == b.Counter && a.Epoch == b.Epoch && slices.Equal(a.Marks, b.Marks) &&
		slices.Equal(a.Columns, b.Columns) && maps.Equal(a.Counters, b.Counters) &&
		maps.EqualFunc(a.Tallies, b.Tallies, Tally.Equal)
}

// HasMark reports whether a carries the named mark.
func (a Anchor) HasMark(name string) bool {
	_, ok := slices.BinarySearch(a.Marks, name)
	return ok
}

// stateKey is one state key: its epoch (the generation at which it was
// made) and its secret.
type stateKey struct {
	epoch  uint64
	secret []byte
}

// ErrUnknownEpoch means state was MAC'd under a state key this keyring
// does not have: the state was written under a newer copy of the keyring
// file. It matches [ErrRollback].
var ErrUnknownEpoch = fmt.Errorf("%w (state written under a newer keyring)", ErrRollback)

// ErrStateMAC means state failed its MAC: it was altered or written under
// another keyring.
var ErrStateMAC = errors.New("keyring: state failed authentication")

var databaseIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// StateMAC returns a MAC of msg under the keyring's newest state key and
// that key's epoch, for VerifyStateMAC.
func (kr *Keyring) StateMAC(msg []byte) (epoch uint64, mac []byte) {
	s := kr.load()
	epoch, secret := s.newestStateKey()
	return epoch, kr.stateMAC(epoch, secret, msg)
}

// VerifyStateMAC checks a MAC made by StateMAC. It returns an
// error matching [ErrUnknownEpoch] (and [ErrRollback]) if this keyring
// lacks the state key, and [ErrStateMAC] if the MAC does not match.
func (kr *Keyring) VerifyStateMAC(epoch uint64, msg, mac []byte) error {
	s := kr.load()
	secret, ok := s.stateKeyAt(epoch)
	if !ok && epoch == 0 {
		return fmt.Errorf("%w: state MAC'd under epoch 0 (the root alone, which any copy of the keyring file derives), in a keyring with state keys", ErrStateMAC)
	}
	if !ok {
		return fmt.Errorf("%w: epoch %d, this keyring file's newest is %d", ErrUnknownEpoch, epoch, s.newestEpoch())
	}
	if !hmac.Equal(kr.stateMAC(epoch, secret, msg), mac) {
		return ErrStateMAC
	}
	return nil
}

// VerifyRootStateMAC checks a MAC made under epoch 0 — the root alone,
// as keyrings from before state keys made them — whatever state keys the
// keyring has since. Any copy of the keyring file derives epoch 0: call it
// only for state the keyring file itself vouches was last written under
// epoch 0 (a database anchored at epoch 0, when the keyring gained its
// first state key after that write), never in place of VerifyStateMAC.
func (kr *Keyring) VerifyRootStateMAC(msg, mac []byte) error {
	if !hmac.Equal(kr.stateMAC(0, nil, msg), mac) {
		return ErrStateMAC
	}
	return nil
}

// stateEpoch returns the epoch of the keyring's newest state key.
func (kr *Keyring) StateEpoch() uint64 { return kr.load().newestEpoch() }

func (kr *Keyring) stateMAC(epoch uint64, secret, msg []byte) []byte {
	key, err := hkdf.Key(sha256.New, kr.root[:], secret, fmt.Sprintf("ward keyring state mac v1\x00%d", epoch), 32)
	if err != nil {
		panic("keyring: internal error: " + err.Error())
	}
	defer clear(key)
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}

func (s *snapshot) newestStateKey() (uint64, []byte) {
	if n := len(s.stateKeys); n > 0 {
		return s.stateKeys[n-1].epoch, s.stateKeys[n-1].secret
	}
	return 0, nil // epoch 0: the root alone, for keyrings without state keys
}

func (s *snapshot) newestEpoch() uint64 { e, _ := s.newestStateKey(); return e }

// stateKeyAt returns the state secret of an epoch. Epoch 0 is the root
// alone: it verifies only in a keyring without state keys (a file from
// before them), since any keyring file ever written derives it.
func (s *snapshot) stateKeyAt(epoch uint64) ([]byte, bool) {
	if epoch == 0 {
		return nil, len(s.stateKeys) == 0
	}
	for _, k := range s.stateKeys {
		if k.epoch == epoch {
			return k.secret, true
		}
	}
	return nil, false
}

// addStateKey gives next a fresh state key at its generation.
func (s *snapshot) addStateKey() {
	secret := make([]byte, 32)
	rand.Read(secret)
	s.stateKeys = append(slices.Clip(s.stateKeys), stateKey{epoch: s.generation, secret: secret})
}

// Anchor returns what the keyring file remembers about a database.
func (kr *Keyring) Anchor(database string) (Anchor, bool) {
	a, ok := kr.load().anchors[database]
	return a, ok
}

// Anchored lists the databases the keyring file anchors, sorted.
func (kr *Keyring) Anchored() []string {
	return slices.Sorted(maps.Keys(kr.load().anchors))
}

// ErrAnchorRollback means SetAnchor was given a counter or epoch lower
// than the one recorded: anchors only move forward. It matches
// [ErrRollback].
var ErrAnchorRollback = fmt.Errorf("%w (anchor)", ErrRollback)

// SetAnchor records a database's newest state, merging marks with those
// already recorded: a keyring loaded from a file saves it there first
// (like every change, and bumping the generation). It refuses to lower a
// counter or epoch ([ErrAnchorRollback]); setting what is already recorded
// writes nothing. If another process saved the file first, SetAnchor
// reloads it and tries again, up to maxAnchorAttempts rounds in all.
func (kr *Keyring) SetAnchor(ctx context.Context, database string, a Anchor) error {
	if !databaseIDPattern.MatchString(database) {
		return fmt.Errorf("keyring: invalid database ID %.80q", database)
	}
	a.Marks, a.Columns = union(nil, a.Marks), union(nil, a.Columns)
	if !a.valid() {
		return fmt.Errorf("keyring: more than %d marks, %d counters or tallies or %d columns, an overlong name or a malformed tally", maxMarks, maxCounters, maxColumns)
	}
	// Anchors merge and only move forward, so retrying after another
	// process's save is safe, whatever it saved; several operators or
	// services saving at once may each need a few rounds.
	return kr.retryStale(ctx, func() error { return kr.setAnchorOnce(ctx, database, a) }, nil)
}

// maxAnchorAttempts bounds SetAnchor's rounds against concurrent saves.
const maxAnchorAttempts = 8

func (kr *Keyring) setAnchorOnce(ctx context.Context, database string, a Anchor) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	cur := kr.load()
	old, had := cur.anchors[database]
	if had && (a.Counter < old.Counter || a.Epoch < old.Epoch) {
		return fmt.Errorf("%w: database %s is anchored at counter %d epoch %d, given %d and %d", ErrAnchorRollback, database, old.Counter, old.Epoch, a.Counter, a.Epoch)
	}
	merged := old.merge(a)
	if !merged.valid() {
		return fmt.Errorf("keyring: database %s's anchor would carry more than %d marks, %d counters or tallies or %d columns, an overlong name or a malformed tally", database, maxMarks, maxCounters, maxColumns)
	}
	if had && merged.equal(old) {
		return nil
	}
	if !had && len(cur.anchors) >= maxAnchors {
		return fmt.Errorf("keyring: the keyring file already anchors %d databases", maxAnchors)
	}
	next := cur.clone()
	next.anchors[database] = merged
	next.generation++
	if kr.file != nil {
		if err := kr.file.save(ctx, kr, next, kr.file.ks); err != nil {
			return err
		}
	}
	kr.publish(next)
	return nil
}
