package forgetlog

import (
	"encoding/hex"
	"errors"
	"maps"
	"slices"
)

// Records of subjects gone private.
//
// A subject going private (field/subject's MakePrivate, with a journal)
// is counted in the ledger's tally of the namespace's private subjects
// in the transaction that makes it private, and recorded here first
// (ward-private-v2) with the tally it chains from, MAC'd under the
// current integrity epoch's key. A record then counts when:
//   - its MAC is under the keyring's current epoch: whoever can write it
//     holds today's keyring, and may make anyone private anyway (a record
//     of a transaction that rolled back counts too: a denial the operator
//     chose, as before tallies);
//   - or it lies on the chain back from the ledger's tally: a private
//     record that committed, of any epoch, retired ones included.
//
// A record planted with an older keyring file (an epoch that is no
// longer current, or retired) is neither, and makes nobody private. v1
// records (ward-private-v1, MAC'd under the root's key, which every copy
// of the keyring file derives) count only until the namespace's v1
// records were moved onto the chain ([Commitment].V1).

// Commitment is what a database's ledger commits to of a namespace's
// subjects gone private.
type Commitment struct {
	// Tally is the ledger's tally of the namespace's private subjects
	// (its newest committed state: a verified ledger is never behind its
	// anchor).
	Tally Tally
	// V1 keeps records from before tallies counting: true until their
	// subjects were counted on the chain (field/subject marks it).
	V1 bool
}

// privateRecords are a namespace's records of subjects gone private.
type privateRecords struct {
	recs      []record
	bySubject map[string][]int // subject hash (hex) → its records
	// onChain caches the records on the chain back from a tally, for
	// the tally (its key) and the records read so far.
	onChain  map[int]bool
	chainKey string
	chainLen int
}

func (r *Records) addPrivate(namespace string, rec record) {
	p := r.private[namespace]
	if p == nil {
		p = &privateRecords{bySubject: map[string][]int{}}
		r.private[namespace] = p
	}
	p.bySubject[rec.subject] = append(p.bySubject[rec.subject], len(p.recs))
	p.recs = append(p.recs, rec)
}

// committed returns the records on the chain back from t.
func (p *privateRecords) committed(t Tally) map[int]bool {
	if k := tallyKey(t); p.onChain == nil || p.chainKey != k || p.chainLen != len(p.recs) {
		p.onChain = map[int]bool{}
		newChain(p.recs).back(t, Tally{Count: ^uint64(0)}, p.onChain)
		p.chainKey, p.chainLen = k, len(p.recs)
	}
	return p.onChain
}

// Private reports whether the records say the subject went private,
// under the rules above; commit is asked for the ledger's commitment
// only when a record of the subject needs it.
func (r *Records) Private(namespace, subject string, commit func() (Commitment, error)) (bool, error) {
	p := r.private[namespace]
	if p == nil {
		return false, nil
	}
	is := p.bySubject[hex.EncodeToString(subjectHash(r.keys.hash, namespace, subject))]
	if len(is) == 0 {
		return false, nil
	}
	if current, _, err := r.keys.current(); err == nil {
		for _, i := range is {
			if rec := p.recs[i]; rec.chained && rec.proven && rec.epoch == current {
				return true, nil
			}
		}
	}
	c, err := commit()
	if err != nil {
		return false, err
	}
	on := p.committed(c.Tally)
	return slices.ContainsFunc(is, func(i int) bool { return on[i] || (!p.recs[i].chained && c.V1) }), nil
}

// Unchained returns the identities of a namespace's v1 private records
// whose subject has no record on the chain back from c's tally: what
// moving the v1 records onto the chain counts.
func (r *Records) Unchained(namespace string, c Commitment) [][]byte {
	p := r.private[namespace]
	if p == nil {
		return nil
	}
	on := p.committed(c.Tally)
	var out [][]byte
	for _, subject := range slices.Sorted(maps.Keys(p.bySubject)) {
		is := p.bySubject[subject]
		v1 := slices.ContainsFunc(is, func(i int) bool { return !p.recs[i].chained })
		if v1 && !slices.ContainsFunc(is, func(i int) bool { return on[i] }) {
			id, _ := hex.DecodeString(subject)
			out = append(out, id)
		}
	}
	return out
}

// Private reports whether the journal says the subject went private, in
// the database named ([Records.Private]): the journal is read anew up to
// its end first (only what was appended since the last call). A store
// asks before it creates a keyring-wrapped key, which a database writer
// who deleted a private user's key rows would otherwise get.
func (j *Journal) Private(database, namespace, subject string, commit func() (Commitment, error)) (bool, error) {
	// commit reads the ledger: it is called without the journal's lock
	// held, so that other goroutines' look-ups do not queue behind the
	// database. The records are asked again with its answer (and read
	// anew: a record appended meanwhile is judged under it too).
	p, err := j.private(database, namespace, subject, func() (Commitment, error) { return Commitment{}, errNeedCommitment })
	if !errors.Is(err, errNeedCommitment) {
		return p, err
	}
	c, err := commit()
	if err != nil {
		return false, err
	}
	return j.private(database, namespace, subject, func() (Commitment, error) { return c, nil })
}

// errNeedCommitment stops a look-up that needs the ledger's commitment.
var errNeedCommitment = errors.New("forgetlog: the ledger's commitment is needed")

// private is [Records.Private] over the journal, read anew, under its lock.
func (j *Journal) private(database, namespace, subject string, commit func() (Commitment, error)) (bool, error) {
	j.live.mu.Lock()
	defer j.live.mu.Unlock()
	if err := j.refresh(database); err != nil {
		return false, err
	}
	return j.live.records.Private(namespace, subject, commit)
}

// Unchained is [Records.Unchained] over the journal, read anew.
func (j *Journal) Unchained(database, namespace string, c Commitment) ([][]byte, error) {
	j.live.mu.Lock()
	defer j.live.mu.Unlock()
	if err := j.refresh(database); err != nil {
		return nil, err
	}
	return j.live.records.Unchained(namespace, c), nil
}
