// Package forgetlog keeps the forget journal: a record of forgets outside
// the database (and of subjects going private), so that
// a database that goes back in time (an asynchronous failover that lost
// its last commits, a restore from backup) cannot bring forgotten subjects
// back: a recovery replays the journal ([Read], package lifecycle).
//
// A journal is a folder on storage that outlives the database's own (a
// volume shared by the fleet, or one per instance gathered at recovery).
// Each process appends to a file of its own, created when it first
// forgets, so that any number of processes append at once without a lock,
// and a service whose keyring file is read-only still records its forgets.
// A record holds no subject ID: it holds a keyed hash of the namespace and
// subject (HMAC-SHA-256 under a key derived from the keyring, [Identity]),
// the ledger's database ID, the versions of the keys the forget deleted,
// the ledger's tally of forgets it chains from, the time, and a MAC. A
// record is appended before its forget commits; [Records.Settle] keeps
// those on the chain of tallies the ledger and the keyring file's anchor
// commit to, so a forget that rolled back counts for nothing. Whoever holds the keyring can tell
// whether a given subject was forgotten; nobody else learns who was. A
// record that fails its MAC (written without the keyring) is counted and
// ignored, so a writer of the folder can delete records (then those
// forgets are not replayed, as without a journal) but not plant one; a
// holder of an older copy of the keyring file, whose MACs verify, plants
// nothing either once the ledger's tallies have moved on: a forget record
// counts on the chain [Records.Settle] follows, a record of a subject
// going private on the one [Records.Private] follows.
package forgetlog

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
)

// Ext is the extension of a journal file.
const Ext = ".wfj"

// version opens every forget record; privateVersion every record of a
// subject going private.
const (
	version        = "ward-forget-v1"
	versionKeys    = "ward-forget-v2" // with the subject's key versions
	versionChain   = "ward-forget-v3" // and the ledger's tally before the forget
	privateVersion = "ward-private-v1"
	privateChain   = "ward-private-v2" // chained to the ledger's tally of private subjects
)

// maxLine bounds a record's line when reading: a longer one is a
// writer's, and is counted invalid without being kept. The longest record
// (v3, a namespace of 256 bytes, 64 key versions) is about 1,500 bytes.
const maxLine = 2048

// databaseID is what a ledger's database ID looks like (and what a
// keyring anchors): no space can split a record.
var databaseID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// Entry is one forget.
type Entry struct {
	// Database is the ledger's database ID (ledger.State.Database).
	Database string
	// Namespace and Subject name who was forgotten; only a keyed hash of
	// them is written.
	Namespace, Subject string
	// At is when (default now).
	At time.Time
	// Private records that the subject went private (its keys held by the
	// user only) instead of a forget: a store then never creates a
	// keyring-wrapped key for it, whatever the database says
	// (field/subject). With Chain it is a ward-private-v2 record, chained
	// from Prev, the ledger's tally of the namespace's subjects gone
	// private before this one; without, a v1 record (MAC'd under the
	// root's key, which every copy of the keyring file derives: written
	// only by tests of the upgrade).
	Private bool
	// Keys, for a forget with BindKeys, are the versions of the keys it
	// deleted (none for a subject that had none): what binds the record
	// to the subject it forgot, not only to its ID. A key a recovery
	// finds under a version the record does not name was created after
	// the forget — a new subject that received a recycled ID — and is
	// not forgotten again (record v2, FORMAT.md). At most MaxKeys.
	Keys     []uint32
	BindKeys bool
	// Prev, for a forget with Chain, is the ledger's tally of the
	// namespace's forgets before this one (ledger.Ledger.TallyTx): a
	// recovery accepts the record as a forget that committed only if it
	// lies on the chain from the ledger's tally to the anchor's (record
	// v3, FORMAT.md). Keys then are bound as with BindKeys (nil: more
	// than MaxKeys, bound to the ID alone).
	Prev  Tally
	Chain bool
	// Identity, if set, is the record's subject hash ([Identity]) in place
	// of one computed from Subject: a v1 private record moved onto its
	// namespace's chain (field/subject) names only its hash.
	Identity []byte
}

// Tally is a ledger's count of a namespace's forgets with the hash chain
// over the forgotten subjects' identities ([Identity]).
type Tally = keycore.Tally

// MaxKeys bounds the key versions a record names; a forget of a subject
// with more is recorded without them (v1), as a forget of its ID alone.
const MaxKeys = 64

// Journal appends a process's forgets to a file of its own in a folder.
// It is safe for concurrent use.
type Journal struct {
	dir string
	keySet

	mu   sync.Mutex
	f    *os.File
	name string

	live live // what Private reads
}

// keySet are a journal's keys: the subject hash key and the MAC key of v1,
// v2 and private records, derived from the keyring's root, which no key
// rotation changes; and the integrity keys of v3 records, one per epoch
// (FORMAT.md, "Integrity epochs"), which a rotation starts and a retire
// ends.
type keySet struct {
	hash, mac []byte
	// current returns the current epoch and its key; at the key of an
	// epoch a record names.
	current func() (epoch uint32, key []byte, err error)
	at      func(epoch uint32) ([]byte, error)
}

// epochPurpose is the integrity-key purpose of v3 records.
const epochPurpose = "forget journal"

// keys derives the journal's keys from the keyring.
func keys(kr *keyring.Keyring) (keySet, error) {
	var ks keySet
	var err error
	if ks.hash, err = kr.Derive("forget journal subject v1", 32); err != nil {
		return keySet{}, fmt.Errorf("forgetlog: %w", err)
	}
	if ks.mac, err = kr.Derive("forget journal mac v1", 32); err != nil {
		return keySet{}, fmt.Errorf("forgetlog: %w", err)
	}
	ks.current = func() (uint32, []byte, error) {
		epoch, key, err := kr.IntegrityKey(epochPurpose)
		return uint32(epoch), key, err
	}
	var mu sync.Mutex
	derived := map[uint32][]byte{} // an epoch's key, derived once per read
	ks.at = func(epoch uint32) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if k, ok := derived[epoch]; ok {
			return k, nil
		}
		k, err := kr.IntegrityKeyAt(keyring.KeyID(epoch), epochPurpose)
		if err == nil && len(derived) < 64 {
			derived[epoch] = k
		}
		return k, err
	}
	return ks, nil
}

// Open returns the journal in dir, creating the folder (0700) if missing,
// and checks that this process can create a file there.
func Open(dir string, kr *keyring.Keyring) (*Journal, error) {
	if dir == "" {
		return nil, errors.New("forgetlog: no folder named")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("forgetlog: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("forgetlog: the folder %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	j := &Journal{dir: dir}
	if j.keySet, err = keys(kr); err != nil {
		return nil, err
	}
	return j, nil
}

// Dir returns the journal's folder.
func (j *Journal) Dir() string { return j.dir }

// Append records a forget and returns once it is on stable storage
// (the file, and on its creation the folder, synced).
func (j *Journal) Append(ctx context.Context, e Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !databaseID.MatchString(e.Database) || e.Namespace == "" {
		return fmt.Errorf("forgetlog: an entry needs a database ID (ledger.State.Database) and a namespace, got %.80q and %.80q", e.Database, e.Namespace)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	line, err := j.record(e)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		if err := j.create(); err != nil {
			return err
		}
	}
	if _, err := j.f.Write(line); err != nil {
		j.drop()
		return fmt.Errorf("forgetlog: appending to %s: %w", j.name, err)
	}
	if err := j.f.Sync(); err != nil {
		j.drop()
		return fmt.Errorf("forgetlog: syncing %s: %w", j.name, err)
	}
	return nil
}

// create starts this process's file: a fresh random name, so that no two
// processes ever share one.
func (j *Journal) create() error {
	var b [12]byte
	rand.Read(b[:])
	name := filepath.Join(j.dir, "forgets-"+hex.EncodeToString(b[:])+Ext)
	if err := os.MkdirAll(j.dir, 0o700); err != nil { // a folder removed since Open
		return fmt.Errorf("forgetlog: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("forgetlog: %w", err)
	}
	if d, err := os.Open(j.dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			f.Close()
			return fmt.Errorf("forgetlog: syncing %s: %w", j.dir, err)
		}
	}
	j.f, j.name = f, name
	return nil
}

// drop closes a file a write failed on: the next forget starts a new one,
// so a torn record stays last in its file.
func (j *Journal) drop() {
	j.f.Close()
	j.f = nil
}

// Close closes this process's file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// subjectHash is the keyed hash a record holds instead of the subject.
func subjectHash(key []byte, namespace, subject string) []byte {
	m := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	m.Write(n[:binary.PutUvarint(n[:], uint64(len(namespace)))])
	m.Write([]byte(namespace))
	m.Write([]byte(subject))
	return m.Sum(nil)
}

// Identity is the keyed hash a journal record and a ledger's tally hold
// instead of a subject: HMAC-SHA-256, under a key derived from the
// keyring's root, of the namespace's length (uvarint), the namespace and
// the subject. It is stable across rotations: a holder of any copy of the
// keyring file can test a list of IDs against it (SECURITY.md).
func Identity(kr *keyring.Keyring, namespace, subject string) ([]byte, error) {
	ks, err := keys(kr)
	if err != nil {
		return nil, err
	}
	return subjectHash(ks.hash, namespace, subject), nil
}

// Identity is [Identity] under this journal's keyring.
func (j *Journal) Identity(namespace, subject string) []byte {
	return subjectHash(j.hash, namespace, subject)
}

// Item is what a ledger's tally counts for a forget (ledger.Ledger.TallyTx)
// and a v3 record's tally after adds: the subject's identity and the
// key versions the forget deleted, as the record spells them ("-" for
// none, "*" for more than MaxKeys or nil), so the chain commits to both.
func Item(identity []byte, keys []uint32) []byte {
	return append(slices.Clip(identity), keysField(keys)...)
}

// PrivateItem is what a ledger's tally of a namespace's subjects gone
// private counts for one (field/subject's private counter) and a
// ward-private-v2 record's tally after adds: the subject's identity.
func PrivateItem(identity []byte) []byte { return slices.Clip(identity) }

// keysField spells a v3 record's key versions.
func keysField(keys []uint32) string {
	if keys == nil || len(keys) > MaxKeys {
		return "*"
	}
	return keyList(keys)
}

// record is an entry's line: version, database, namespace (hex),
// subject hash (hex), in v2 and v3 the key versions, in v3 and private v2
// the tally before and the integrity epoch, Unix time, MAC (hex) over all
// before it: in v3 and private v2 under the epoch's integrity key, else
// under the root's MAC key.
func (j *Journal) record(e Entry) ([]byte, error) {
	tag, keys, macKey := version, "", j.mac
	switch {
	case e.Chain:
		epoch, key, err := j.current()
		if err != nil {
			return nil, fmt.Errorf("forgetlog: %w", err)
		}
		tag, keys, macKey = versionChain, fmt.Sprintf(" %s %s %08x", keysField(e.Keys), tallyText(e.Prev), epoch), key
		if e.Private {
			tag, keys = privateChain, fmt.Sprintf(" %s %08x", tallyText(e.Prev), epoch)
		}
	case e.Private:
		tag = privateVersion
	case e.BindKeys && len(e.Keys) <= MaxKeys:
		tag, keys = versionKeys, " "+keyList(e.Keys)
	}
	id := e.Identity
	if id == nil {
		id = subjectHash(j.hash, e.Namespace, e.Subject)
	} else if len(id) != sha256.Size {
		return nil, fmt.Errorf("forgetlog: an identity is %d bytes, got %d", sha256.Size, len(id))
	}
	body := fmt.Sprintf("%s %s %s %s%s %d", tag, e.Database, hex.EncodeToString([]byte(e.Namespace)),
		hex.EncodeToString(id), keys, e.At.Unix())
	m := hmac.New(sha256.New, macKey)
	m.Write([]byte(body))
	return []byte(body + " " + hex.EncodeToString(m.Sum(nil)) + "\n"), nil
}
