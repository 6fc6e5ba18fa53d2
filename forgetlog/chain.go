package forgetlog

import (
	"encoding/hex"
	"fmt"
)

// Settlement is what [Records.Settle] found of a namespace's forgets.
type Settlement struct {
	// ByIdentity reports whether the records were told apart by the
	// tallies: the ledger's and the anchor's chains start at the same
	// count. When false (a namespace counted before tallies, or a ledger
	// gone back to before its tally started) every record is kept and the
	// forgets can only be counted, as before tallies.
	ByIdentity bool `json:"by_identity"`
	// Committed is how many records lie on the ledger's or the anchor's
	// chain: forgets that committed.
	Committed int `json:"committed"`
	// Unsure is how many records continue a chain past the newest point
	// known to have committed, or from the ledger's tally where its chain
	// to the anchor's is broken: forgets that may have committed (a
	// keyring file that could not save its anchor). They are kept, so a
	// recovery forgets their subjects, as was asked.
	Unsure int `json:"unsure"`
	// Uncommitted is how many records are off the chain: forgets whose
	// transaction did not commit (rolled back, or run again at another
	// place). They are dropped: they neither count nor forget anyone.
	Uncommitted int `json:"uncommitted"`
	// Unproven is how many records off the chain are of an epoch whose
	// key was retired: their MAC cannot be checked (a copy from before,
	// or a forgery made with an old keyring file). They are dropped.
	Unproven int `json:"unproven"`
	// Earlier is how many records are from before tallies (v1, v2) in a
	// namespace whose tally has counted a forget: they name forgets the
	// tally began after, which the database holds, and a keyring file of
	// any age MACs them, so they are dropped.
	Earlier int `json:"earlier"`
	// Lost is how many forgets the anchor's tally counts past the
	// ledger's that the records do not prove: those the chain back from
	// the anchor's tally does not reach (a record before the gap may be a
	// rolled-back forget in a lost one's place, and is only Unsure).
	Lost uint64 `json:"lost"`
}

// chain is a namespace's v3 records as a graph: each record leads from
// the tally before its forget to the tally after. Each tally has at most
// one tally before it (its head is a hash of the one before), so the
// records leading to a tally are those of one forget (run again after a
// deadlock, or appended by two journals).
type chain struct {
	recs   []record
	from   map[string][]int // tally (key) → the records leading from it
	byNext map[string][]int // tally → the records leading to it
}

func tallyKey(t Tally) string {
	return fmt.Sprintf("%d/%d/%s", t.Count, t.Since, hex.EncodeToString(t.HeadOrZero()))
}

func newChain(recs []record) *chain {
	c := &chain{recs: recs, from: map[string][]int{}, byNext: map[string][]int{}}
	for i, rec := range recs {
		if !rec.chained {
			continue
		}
		k, n := tallyKey(rec.prev), tallyKey(rec.next())
		c.from[k] = append(c.from[k], i)
		c.byNext[n] = append(c.byNext[n], i)
	}
	return c
}

// back marks the records leading back from t, to its chain's start or to
// a gap, and returns how many links it followed until it met stop (all,
// if it never did) and whether it met it.
func (c *chain) back(t, stop Tally, mark map[int]bool) (links uint64, met bool) {
	stopKey := tallyKey(stop)
	for t.Count > t.Since {
		k := tallyKey(t)
		if k == stopKey {
			return links, true
		}
		is := c.byNext[k]
		if len(is) == 0 {
			break
		}
		for _, i := range is {
			mark[i] = true
		}
		t = c.recs[is[0]].prev
		links++
	}
	return links, tallyKey(t) == stopKey
}

// forward marks every record reachable from t.
func (c *chain) forward(t Tally, mark map[int]bool) {
	stack := []Tally{t}
	for len(stack) > 0 {
		t, stack = stack[len(stack)-1], stack[:len(stack)-1]
		for _, i := range c.from[tallyKey(t)] {
			if !mark[i] {
				mark[i] = true
				stack = append(stack, c.recs[i].next())
			}
		}
	}
}

// Settle keeps, of a namespace's records, those that count: ledger is the
// database's tally of the namespace's forgets (ledger.State.Tally), anchor
// the keyring file's (its Tally; the ledger's when the ledger is not
// behind it). The records on the chain from the start of the ledger's
// tally to the anchor's are forgets that committed; a record off it
// (a forget whose transaction rolled back) counts for nothing, so it
// cannot stand in for a lost forget whose journal was not given. Records
// past the newest committed point may have committed and are kept, if
// their MAC verifies under an integrity epoch the keyring holds. v1 and v2
// records (before tallies) are dropped once the namespace's tally has
// counted a forget, and kept while it has not, or when the tallies cannot
// tell (ByIdentity false: every record is kept, as before tallies).
// Settle a namespace once, before reading its records. On nil Records (no
// journal given) it says what the tallies alone prove lost.
func (r *Records) Settle(namespace string, ledger, anchor Tally) Settlement {
	var recs []record
	if r != nil {
		recs = r.forgets[namespace]
	}
	var st Settlement
	if anchor.Count <= ledger.Count {
		anchor = ledger // the ledger is the newest committed state
	} else if anchor.Since != ledger.Since {
		return st
	}
	st.ByIdentity = true
	tallied := anchor.Count > anchor.Since // a forget was tallied: records from before tallies count for nothing
	c := newChain(recs)
	committed, unsure := map[int]bool{}, map[int]bool{}
	c.back(ledger, Tally{Count: ^uint64(0)}, committed)
	if links, met := c.back(anchor, ledger, committed); !met {
		st.Lost = anchor.Count - ledger.Count - min(links, anchor.Count-ledger.Count)
		c.forward(ledger, unsure)
	}
	c.forward(anchor, unsure)
	var kept []record
	for i, rec := range recs {
		switch {
		case !rec.chained && tallied:
			st.Earlier++
			continue
		case !rec.chained:
		case committed[i]:
			st.Committed++
		case !rec.proven:
			st.Unproven++
			continue
		case unsure[i] && anchor.Count > ledger.Count:
			st.Unsure++
		default:
			st.Uncommitted++
			continue
		}
		kept = append(kept, rec)
	}
	if r != nil {
		r.forgets[namespace] = kept
		r.index = nil
	}
	return st
}
