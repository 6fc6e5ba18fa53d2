// Package journal keeps a record of forgets outside the database, so that
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
// subject (HMAC-SHA-256 under a key derived from the keyring), the ledger's
// database ID, the time, and a MAC. Whoever holds the keyring can tell
// whether a given subject was forgotten; nobody else learns who was. A
// record that fails its MAC (written without the keyring) is counted and
// ignored, so a writer of the folder can delete records (then those
// forgets are not replayed, as without a journal) but not plant one.
package journal

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/keyring"
)

// Ext is the extension of a journal file.
const Ext = ".wfj"

// version opens every forget record; privateVersion every record of a
// subject going private.
const (
	version        = "ward-forget-v1"
	versionKeys    = "ward-forget-v2" // with the subject's key versions
	privateVersion = "ward-private-v1"
)

// maxLine bounds a record's line when reading: a longer one is a
// writer's, and is counted invalid without being kept.
const maxLine = 1024

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
	// (field/subject).
	Private bool
	// Keys, for a forget with BindKeys, are the versions of the keys it
	// deleted (none for a subject that had none): what binds the record
	// to the subject it forgot, not only to its ID. A key a recovery
	// finds under a version the record does not name was created after
	// the forget — a new subject that received a recycled ID — and is
	// not forgotten again (record v2, FORMAT.md). At most MaxKeys.
	Keys     []uint32
	BindKeys bool
}

// MaxKeys bounds the key versions a record names; a forget of a subject
// with more is recorded without them (v1), as a forget of its ID alone.
const MaxKeys = 64

// Journal appends a process's forgets to a file of its own in a folder.
// It is safe for concurrent use.
type Journal struct {
	dir           string
	hashKey, mKey []byte

	mu   sync.Mutex
	f    *os.File
	name string

	live live // what Private reads
}

// keys derives the journal's hash and MAC keys from the keyring's root,
// which no key rotation changes.
func keys(kr *keyring.Keyring) (hashKey, macKey []byte, err error) {
	if hashKey, err = kr.Derive("forget journal subject v1", 32); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	if macKey, err = kr.Derive("forget journal mac v1", 32); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	return hashKey, macKey, nil
}

// Open returns the journal in dir, creating the folder (0700) if missing,
// and checks that this process can create a file there.
func Open(dir string, kr *keyring.Keyring) (*Journal, error) {
	if dir == "" {
		return nil, errors.New("journal: no folder named")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("journal: the folder %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	j := &Journal{dir: dir}
	if j.hashKey, j.mKey, err = keys(kr); err != nil {
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
		return fmt.Errorf("journal: an entry needs a database ID (ledger.State.Database) and a namespace, got %.80q and %.80q", e.Database, e.Namespace)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	line := j.record(e)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		if err := j.create(); err != nil {
			return err
		}
	}
	if _, err := j.f.Write(line); err != nil {
		j.drop()
		return fmt.Errorf("journal: appending to %s: %w", j.name, err)
	}
	if err := j.f.Sync(); err != nil {
		j.drop()
		return fmt.Errorf("journal: syncing %s: %w", j.name, err)
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
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if d, err := os.Open(j.dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			f.Close()
			return fmt.Errorf("journal: syncing %s: %w", j.dir, err)
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

// record is an entry's line: version, database, namespace (hex),
// subject hash (hex), in v2 the key versions, Unix time, MAC (hex) over
// all before it.
func (j *Journal) record(e Entry) []byte {
	tag, keys := version, ""
	switch {
	case e.Private:
		tag = privateVersion
	case e.BindKeys && len(e.Keys) <= MaxKeys:
		tag, keys = versionKeys, " "+keyList(e.Keys)
	}
	body := fmt.Sprintf("%s %s %s %s%s %d", tag, e.Database, hex.EncodeToString([]byte(e.Namespace)),
		hex.EncodeToString(subjectHash(j.hashKey, e.Namespace, e.Subject)), keys, e.At.Unix())
	m := hmac.New(sha256.New, j.mKey)
	m.Write([]byte(body))
	return []byte(body + " " + hex.EncodeToString(m.Sum(nil)) + "\n")
}

// Records are the valid records of one database read from journals.
type Records struct {
	// Files is how many journal files were read.
	Files int
	// Invalid counts lines that failed to parse or their MAC (a writer
	// of the folder's, or a record torn by a crash mid-write).
	Invalid int
	// Other counts valid records of other databases.
	Other int

	hashKey []byte
	byNS    map[string]map[string]time.Time // namespace → subject hash (hex) → when
	private map[string]map[string]time.Time // the same, for subjects that went private
	keys    map[string]map[string][]uint32  // namespace → subject hash → key versions, all of its records v2
	unbound map[string]map[string]bool      // namespace → subject hash → a v1 record names it
}

// keyList spells key versions as a record holds them: "-" for none, else
// 8 hex digits each, sorted, comma-separated.
func keyList(keys []uint32) string {
	if len(keys) == 0 {
		return "-"
	}
	ks := slices.Sorted(slices.Values(keys))
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = fmt.Sprintf("%08x", k)
	}
	return strings.Join(out, ",")
}

// parseKeys reads keyList's spelling, refusing any other.
func parseKeys(s string) ([]uint32, bool) {
	if s == "-" {
		return []uint32{}, true
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxKeys {
		return nil, false
	}
	out := make([]uint32, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil || len(p) != 8 || p != strings.ToLower(p) {
			return nil, false
		}
		out[i] = uint32(v)
	}
	return out, keyList(out) == s
}

// Read reads every journal file in the folders given and returns the
// valid records of database.
func Read(kr *keyring.Keyring, database string, dirs ...string) (*Records, error) {
	hashKey, macKey, err := keys(kr)
	if err != nil {
		return nil, err
	}
	r := newRecords(hashKey)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("journal: %s is not a journal folder: %w", dir, cmpErr(err))
		}
		files, err := filepath.Glob(filepath.Join(dir, "*"+Ext))
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		for _, name := range files {
			if err := r.readFile(name, macKey, database); err != nil {
				return nil, err
			}
			r.Files++
		}
	}
	return r, nil
}

// MaxFile bounds a journal file: a process's file holds a record of about
// 200 bytes per forget, so 1 GiB is some five million forgets. A larger
// file, or anything but a regular file where a journal file should be (a
// FIFO, a device such as /dev/zero, a folder named *.wfj), is refused with
// an error naming it, at once: a writer of the folder cannot make a read
// hang or fill memory.
const MaxFile = 1 << 30

// openJournalFile opens a journal file for reading, refusing what
// MaxFile's comment says. A file is read only up to the size it had when
// opened.
func openJournalFile(name string) (*os.File, fs.FileInfo, error) {
	f, fi, err := boundfile.Open(name, MaxFile)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	return f, fi, nil
}

func newRecords(hashKey []byte) *Records {
	return &Records{hashKey: hashKey, byNS: map[string]map[string]time.Time{}, private: map[string]map[string]time.Time{},
		keys: map[string]map[string][]uint32{}, unbound: map[string]map[string]bool{}}
}

func cmpErr(err error) error {
	if err == nil {
		return errors.New("not a folder")
	}
	return err
}

func (r *Records) readFile(name string, macKey []byte, database string) error {
	f, fi, err := openJournalFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, fi.Size()), maxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.Invalid++
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of an overlong line
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if len(line) > 0 {
			r.add(line, macKey, database, err == nil)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("journal: reading %s: %w", name, err)
		}
	}
}

// add parses one line; complete is false for a last line without its
// newline (a crash mid-write), which is invalid.
func (r *Records) add(line, macKey []byte, database string, complete bool) {
	f := strings.Split(strings.TrimSuffix(string(line), "\n"), " ")
	var keys []uint32
	switch {
	case complete && len(f) == 7 && f[0] == versionKeys:
		var ok bool
		if keys, ok = parseKeys(f[4]); !ok {
			r.Invalid++
			return
		}
		f = append(f[:4:4], f[5:]...) // as v1, the key versions aside (the MAC is over the line as written)
	case complete && len(f) == 6 && (f[0] == version || f[0] == privateVersion):
	default:
		r.Invalid++
		return
	}
	m := hmac.New(sha256.New, macKey)
	m.Write(line[:strings.LastIndexByte(string(line), ' ')])
	ns, nerr := hex.DecodeString(f[2])
	at, terr := strconv.ParseInt(f[4], 10, 64)
	// The MAC as written (lowercase hex), compared in constant time: one
	// record has one spelling.
	if nerr != nil || terr != nil || !hmac.Equal([]byte(f[5]), []byte(hex.EncodeToString(m.Sum(nil)))) {
		r.Invalid++
		return
	}
	if f[1] != database {
		r.Other++
		return
	}
	into := r.byNS
	if f[0] == privateVersion {
		into = r.private
	} else {
		r.bind(string(ns), f[3], keys)
	}
	if into[string(ns)] == nil {
		into[string(ns)] = map[string]time.Time{}
	}
	if prev, ok := into[string(ns)][f[3]]; !ok || time.Unix(at, 0).Before(prev) {
		into[string(ns)][f[3]] = time.Unix(at, 0)
	}
}

// bind adds a forget record's key versions (nil: a v1 record, bound to
// the ID alone) to what the records say of a subject.
func (r *Records) bind(ns, subject string, keys []uint32) {
	if keys == nil {
		if r.unbound[ns] == nil {
			r.unbound[ns] = map[string]bool{}
		}
		r.unbound[ns][subject] = true
		return
	}
	if r.keys[ns] == nil {
		r.keys[ns] = map[string][]uint32{}
	}
	r.keys[ns][subject] = append(r.keys[ns][subject], keys...)
}

// VersionWindow is how far from a version a record names a key still
// counts as the forgotten subject's. A subject's key versions run on from
// a random start in [1, 2^31), one per re-key, so its other keys — one a
// database writer hid while it was forgotten and put back after, say —
// lie within a few versions of those the record names, while a new
// subject's random start lands within 4,096 of them with a chance of
// 2^-18.
const VersionWindow = 4096

// Forgets reports whether the journals record a forget of the subject
// that holds keys of these versions now: true when a key lies within
// VersionWindow of a version a record names, or a record names the
// subject's ID alone (v1) or no version at all (its keys were gone, or
// hidden, when it was forgotten); false when every record of the subject
// names versions and no key is near them — keys created after the forget,
// for a new subject that received the forgotten one's ID (after a
// restore, a sequence or rowid starting again) — or when no record names
// the subject. A subject holding no key (only sessions), or too many to
// list (versions nil), is bound by any record.
func (r *Records) Forgets(namespace, subject string, versions []uint32) bool {
	h := hex.EncodeToString(subjectHash(r.hashKey, namespace, subject))
	if _, ok := r.byNS[namespace][h]; !ok {
		return false
	}
	named := r.keys[namespace][h]
	if r.unbound[namespace][h] || len(versions) == 0 || len(named) == 0 {
		return true
	}
	return slices.ContainsFunc(versions, func(v uint32) bool {
		return slices.ContainsFunc(named, func(n uint32) bool { return max(v, n)-min(v, n) <= VersionWindow })
	})
}

// Namespaces lists the namespaces with records.
func (r *Records) Namespaces() []string {
	return slices.Sorted(maps.Keys(r.byNS))
}

// Count is how many distinct subjects of a namespace were forgotten.
func (r *Records) Count(namespace string) int { return len(r.byNS[namespace]) }

// Forgotten reports whether the journal records a subject's forget, and
// when (the earliest record).
func (r *Records) Forgotten(namespace, subject string) (time.Time, bool) {
	at, ok := r.byNS[namespace][hex.EncodeToString(subjectHash(r.hashKey, namespace, subject))]
	return at, ok
}

// Private reports whether the journal records that a subject went
// private.
func (r *Records) Private(namespace, subject string) bool {
	_, ok := r.private[namespace][hex.EncodeToString(subjectHash(r.hashKey, namespace, subject))]
	return ok
}

// live is a journal's index of the records every process has appended so
// far, read incrementally (each file from where the last read stopped).
type live struct {
	mu       sync.Mutex
	database string
	records  *Records
	offsets  map[string]int64
}

// Private reports whether any process's record in the journal says the
// subject went private, in the database named: the journal is read anew
// up to its end first (only what was appended since the last call). A
// store asks before it creates a keyring-wrapped key, which a database
// writer who deleted a private user's key rows would otherwise get.
func (j *Journal) Private(database, namespace, subject string) (bool, error) {
	j.live.mu.Lock()
	defer j.live.mu.Unlock()
	if err := j.refresh(database); err != nil {
		return false, err
	}
	return j.live.records.Private(namespace, subject), nil
}

// refresh reads what was appended to the journal since the last call.
func (j *Journal) refresh(database string) error {
	l := &j.live
	if l.records == nil || l.database != database {
		l.records, l.offsets, l.database = newRecords(j.hashKey), map[string]int64{}, database
	}
	files, err := filepath.Glob(filepath.Join(j.dir, "*"+Ext))
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, name := range files {
		if err := l.readFrom(name, j.mKey); err != nil {
			return err
		}
	}
	return nil
}

// readFrom reads a file's complete lines after the offset last read.
func (l *live) readFrom(name string, macKey []byte) error {
	f, fi, err := openJournalFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	off := l.offsets[name]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	br := bufio.NewReaderSize(io.LimitReader(f, max(0, fi.Size()-off)), maxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // an overlong line: a writer's, skipped
			l.records.Invalid++
			off += int64(len(line))
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				off += int64(len(line))
			}
			if err == nil {
				continue
			}
		}
		if err != nil { // EOF: a last line without its newline is read again next time
			l.offsets[name] = off
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("journal: reading %s: %w", name, err)
		}
		l.records.add(line, macKey, l.database, true)
		off += int64(len(line))
	}
}
