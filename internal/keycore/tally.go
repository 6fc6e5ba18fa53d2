package keycore

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Tally is a count that names what it counts: how many identities were
// counted, and a hash chain over them, so that two tallies of the same
// count agree only if they counted the same identities in the same order.
// A ledger keeps one per namespace of forgotten subjects and the keyring
// file's anchor a copy (32 bytes each, whatever the count): a recovery
// then accepts a journal's records of the forgets a database lost only if
// they chain from the ledger's tally to the anchor's (FORMAT.md,
// "Tallies").
type Tally struct {
	// Count is how many were counted in all.
	Count uint64 `json:"count"`
	// Since is the count when the chain started (a counter from before
	// tallies, upgraded in place): the chain covers those counted after.
	Since uint64 `json:"since,omitempty"`
	// Head is the chain's newest link; empty at the start (the zero head).
	Head []byte `json:"head,omitempty"`
}

// TallyHeadSize is the size of a tally's head.
const TallyHeadSize = sha256.Size

// tallyLabel opens every link's input.
const tallyLabel = "ward tally v1\x00"

// Add returns the tally with one more identity counted: Count plus one,
// and Head = SHA-256("ward tally v1" ‖ 0x00 ‖ head ‖ id), the head being
// 32 zero bytes at the start.
func (t Tally) Add(id []byte) Tally {
	return Tally{Count: t.Count + 1, Since: t.Since, Head: NextHead(t.Head, id)}
}

// NextHead is the link that follows head when id is counted.
func NextHead(head, id []byte) []byte {
	h := sha256.New()
	h.Write([]byte(tallyLabel))
	if len(head) == 0 {
		head = make([]byte, TallyHeadSize)
	}
	h.Write(head)
	h.Write(id)
	return h.Sum(nil)
}

// Valid reports whether t's head is empty or of TallyHeadSize, and its
// chain starts no later than its count.
func (t Tally) Valid() bool {
	return (len(t.Head) == 0 || len(t.Head) == TallyHeadSize) && t.Since <= t.Count && (len(t.Head) > 0) == (t.Count > t.Since)
}

// Equal reports whether two tallies count the same identities.
func (t Tally) Equal(u Tally) bool {
	return t.Count == u.Count && t.Since == u.Since && subtle.ConstantTimeCompare(t.HeadOrZero(), u.HeadOrZero()) == 1
}

// HeadOrZero is t's head, 32 zero bytes at the start.
func (t Tally) HeadOrZero() []byte {
	if len(t.Head) == 0 {
		return make([]byte, TallyHeadSize)
	}
	return t.Head
}

// Tally is the anchor's tally of a counter: the recorded one, or the
// counter's count with its chain starting there (an anchor from before
// tallies).
func (a Anchor) Tally(name string) Tally {
	if t, ok := a.Tallies[name]; ok {
		return t
	}
	n := a.Counters[name]
	return Tally{Count: n, Since: n}
}
