package forgetlog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardlab/ward/keyring"
)

// Records are the valid records of one database read from journals.
type Records struct {
	// Files is how many journal files were read.
	Files int
	// Invalid counts lines that failed to parse or their MAC (a writer
	// of the folder's, or a record torn by a crash mid-write).
	Invalid int
	// Other counts valid records of other databases.
	Other int

	keys    keySet
	forgets map[string][]record        // namespace → its forget records, as read (Settle keeps those that count)
	private map[string]*privateRecords // namespace → its records of subjects gone private
	index   map[string]map[string]*subjectRecords
}

// record is one forget record as read.
type record struct {
	subject string    // the subject's hash (hex)
	at      time.Time // when
	keys    []uint32  // the key versions it names; nil: the ID alone (v1, or v3 "*")
	chained bool      // v3 and private v2: prev is the ledger's tally before the record's event
	private bool      // a subject gone private, not a forget
	prev    Tally
	epoch   uint32 // v3: the integrity epoch its MAC is under
	// proven is false for a v3 record whose epoch's key this keyring no
	// longer holds (retired): its MAC cannot be checked, and it counts
	// only as a link of the chain the ledger or anchor commits to.
	proven bool
}

// next is the ledger's tally after a chained record's forget.
func (rec record) next() Tally {
	id, _ := hex.DecodeString(rec.subject)
	if rec.private {
		return rec.prev.Add(PrivateItem(id))
	}
	return rec.prev.Add(Item(id, rec.keys))
}

// subjectRecords is what a namespace's records say of one subject.
type subjectRecords struct {
	at      time.Time // the earliest record
	keys    []uint32  // every version its records name
	unbound bool      // a record names the ID alone
}

func newRecords(ks keySet) *Records {
	return &Records{keys: ks, forgets: map[string][]record{}, private: map[string]*privateRecords{}}
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

// tallyText spells a tally as a v3 record holds it: count/since/head, the
// head in lowercase hex or "-" when empty.
func tallyText(t Tally) string {
	head := "-"
	if len(t.Head) > 0 {
		head = hex.EncodeToString(t.Head)
	}
	return fmt.Sprintf("%d/%d/%s", t.Count, t.Since, head)
}

// parseTally reads tallyText's spelling, refusing any other.
func parseTally(s string) (Tally, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Tally{}, false
	}
	count, err1 := strconv.ParseUint(parts[0], 10, 64)
	since, err2 := strconv.ParseUint(parts[1], 10, 64)
	t := Tally{Count: count, Since: since}
	if parts[2] != "-" {
		var err error
		if t.Head, err = hex.DecodeString(parts[2]); err != nil {
			return Tally{}, false
		}
	}
	if err1 != nil || err2 != nil || !t.Valid() || t.Count == ^uint64(0) {
		return Tally{}, false
	}
	return t, tallyText(t) == s
}

// add parses one line; complete is false for a last line without its
// newline (a crash mid-write), which is invalid.
func (r *Records) add(line []byte, database string, complete bool) {
	f := strings.Split(strings.TrimSuffix(string(line), "\n"), " ")
	rec, ok := parseRecord(f, complete)
	if !ok {
		r.Invalid++
		return
	}
	if rec.proven = r.macOK(line, f, rec); !rec.proven && (!rec.chained || !r.epochEnded(rec.epoch)) {
		r.Invalid++
		return
	}
	if f[1] != database {
		r.Other++
		return
	}
	ns, _ := hex.DecodeString(f[2])
	if rec.private {
		r.addPrivate(string(ns), rec)
		return
	}
	r.forgets[string(ns)] = append(r.forgets[string(ns)], rec)
	r.index = nil
}

// macOK checks a record's MAC, as written (lowercase hex), in constant
// time: under its epoch's integrity key (v3) or the root's MAC key.
func (r *Records) macOK(line []byte, f []string, rec record) bool {
	key := r.keys.mac
	if rec.chained {
		var err error
		if key, err = r.keys.at(rec.epoch); err != nil {
			return false
		}
	}
	m := hmac.New(sha256.New, key)
	m.Write(line[:strings.LastIndexByte(string(line), ' ')])
	return hmac.Equal([]byte(f[len(f)-1]), []byte(hex.EncodeToString(m.Sum(nil))))
}

// epochEnded reports whether the keyring retired an epoch's key: a record
// of it is kept unproven, for the chain to prove or drop.
func (r *Records) epochEnded(epoch uint32) bool {
	_, err := r.keys.at(epoch)
	return errors.Is(err, keyring.ErrEpochEnded)
}

// parseRecord reads a line's fields but its MAC's check: v1 and private
// (6 fields), v2 (7: the key versions), v3 (9: the key versions or "*",
// the tally before and the integrity epoch).
func parseRecord(f []string, complete bool) (record, bool) {
	if !complete || len(f) < 6 {
		return record{}, false
	}
	var rec record
	var ok bool
	switch {
	case len(f) == 9 && f[0] == versionChain:
		if f[4] != "*" {
			if rec.keys, ok = parseKeys(f[4]); !ok {
				return record{}, false
			}
		}
		if rec.prev, ok = parseTally(f[5]); !ok {
			return record{}, false
		}
		if rec.epoch, ok = parseEpoch(f[6]); !ok {
			return record{}, false
		}
		rec.chained = true
	case len(f) == 8 && f[0] == privateChain:
		if rec.prev, ok = parseTally(f[4]); !ok {
			return record{}, false
		}
		if rec.epoch, ok = parseEpoch(f[5]); !ok {
			return record{}, false
		}
		rec.chained, rec.private = true, true
	case len(f) == 7 && f[0] == versionKeys:
		if rec.keys, ok = parseKeys(f[4]); !ok {
			return record{}, false
		}
	case len(f) == 6 && (f[0] == version || f[0] == privateVersion):
		rec.private = f[0] == privateVersion
	default:
		return record{}, false
	}
	_, nerr := hex.DecodeString(f[2])
	h, herr := hex.DecodeString(f[3])
	at, terr := strconv.ParseInt(f[len(f)-2], 10, 64)
	if nerr != nil || herr != nil || terr != nil || len(h) != sha256.Size || hex.EncodeToString(h) != f[3] {
		return record{}, false
	}
	rec.subject, rec.at = f[3], time.Unix(at, 0)
	return rec, true
}

// parseEpoch reads an integrity epoch as a record spells it: 8 lower-case
// hex digits.
func parseEpoch(s string) (uint32, bool) {
	epoch, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 8 || s != strings.ToLower(s) {
		return 0, false
	}
	return uint32(epoch), true
}

// subjects indexes a namespace's records by subject.
func (r *Records) subjects(namespace string) map[string]*subjectRecords {
	if r.index == nil {
		r.index = map[string]map[string]*subjectRecords{}
	}
	if idx, ok := r.index[namespace]; ok {
		return idx
	}
	idx := map[string]*subjectRecords{}
	for _, rec := range r.forgets[namespace] {
		s := idx[rec.subject]
		if s == nil {
			s = &subjectRecords{at: rec.at}
			idx[rec.subject] = s
		}
		if rec.at.Before(s.at) {
			s.at = rec.at
		}
		if rec.keys == nil {
			s.unbound = true
		} else {
			s.keys = append(s.keys, rec.keys...)
		}
	}
	r.index[namespace] = idx
	return idx
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
// list (versions nil), is bound by any record. After [Records.Settle],
// only the records it kept count.
func (r *Records) Forgets(namespace, subject string, versions []uint32) bool {
	s, ok := r.subjects(namespace)[hex.EncodeToString(subjectHash(r.keys.hash, namespace, subject))]
	if !ok {
		return false
	}
	if s.unbound || len(versions) == 0 || len(s.keys) == 0 {
		return true
	}
	return slices.ContainsFunc(versions, func(v uint32) bool {
		return slices.ContainsFunc(s.keys, func(n uint32) bool { return max(v, n)-min(v, n) <= VersionWindow })
	})
}

// Namespaces lists the namespaces with forget records.
func (r *Records) Namespaces() []string {
	return slices.Sorted(maps.Keys(r.forgets))
}

// Count is how many distinct subjects of a namespace were forgotten.
func (r *Records) Count(namespace string) int { return len(r.subjects(namespace)) }

// Forgotten reports whether the journal records a subject's forget, and
// when (the earliest record).
func (r *Records) Forgotten(namespace, subject string) (time.Time, bool) {
	s, ok := r.subjects(namespace)[hex.EncodeToString(subjectHash(r.keys.hash, namespace, subject))]
	if !ok {
		return time.Time{}, false
	}
	return s.at, true
}
