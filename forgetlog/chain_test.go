package forgetlog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// history writes chained records as a ledger's forgets would, in a
// journal without a folder: each forget of a subject advances the tally.
type history struct {
	t     *testing.T
	j     *Journal
	r     *Records
	tally Tally
}

func newHistory(t *testing.T) *history {
	ks := fixedKeys(bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), 7, bytes.Repeat([]byte{3}, 32))
	return &history{t: t, j: &Journal{keySet: ks}, r: newRecords(ks)}
}

// record adds the record of a forget from the tally at, returning the
// tally after it.
func (h *history) record(at Tally, sub string, journaled bool) Tally {
	if journaled {
		line := mustRecord(h.t, h.j, Entry{Database: "db-1", Namespace: "users", Subject: sub, At: time.Unix(1, 0), Keys: []uint32{}, Chain: true, Prev: at})
		h.r.add(line, "db-1", true)
	}
	return at.Add(Item(h.j.Identity("users", sub), []uint32{}))
}

// retired adds a record under an epoch the keyring retired since.
func (h *history) retired(at Tally, sub string) Tally {
	j := &Journal{keySet: h.j.keySet}
	j.current = func() (uint32, []byte, error) { return 0x0badbeef, []byte("a key the keyring no longer holds"), nil }
	h.r.add(mustRecord(h.t, j, Entry{Database: "db-1", Namespace: "users", Subject: sub, At: time.Unix(1, 0), Keys: []uint32{}, Chain: true, Prev: at}), "db-1", true)
	return at.Add(Item(h.j.Identity("users", sub), []uint32{}))
}

// commit is a forget that committed: the tally moves on.
func (h *history) commit(sub string, journaled bool) Tally {
	h.tally = h.record(h.tally, sub, journaled)
	return h.tally
}

func (h *history) forgotten(subs ...string) string {
	var out []string
	for _, s := range subs {
		if _, ok := h.r.Forgotten("users", s); ok {
			out = append(out, s)
		}
	}
	return fmt.Sprint(out)
}

// TestSettle: the records that count are those on the chain from the
// ledger's tally to the anchor's; a rolled-back forget's record (off the
// chain) counts for nothing, so it cannot stand in for a lost forget
// whose journal was not given, and a forget no record names is lost.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		run       func(h *history) (ledger, anchor Tally)
		want      Settlement
		forgotten string
	}{
		{"every lost forget journaled", func(h *history) (Tally, Tally) {
			h.commit("a", true)
			ledger := h.tally
			h.record(ledger, "x", true) // rolled back: same place as b
			h.commit("b", true)
			h.commit("c", true)
			return ledger, h.tally
		}, Settlement{ByIdentity: true, Committed: 3, Uncommitted: 1}, "[a b c]"},
		{"a lost forget not journaled, a rolled-back one in its place", func(h *history) (Tally, Tally) {
			ledger := h.tally
			h.record(ledger, "x", true)
			h.commit("b", false)
			return ledger, h.tally
		}, Settlement{ByIdentity: true, Unsure: 1, Lost: 1}, "[x]"},
		// a may be a rolled-back forget in the place of a lost one: only
		// the chain back from the anchor proves a forget committed.
		{"a gap in the middle", func(h *history) (Tally, Tally) {
			ledger := h.tally
			h.commit("a", true)
			h.commit("b", false)
			h.commit("c", true)
			return ledger, h.tally
		}, Settlement{ByIdentity: true, Committed: 1, Unsure: 1, Lost: 2}, "[a c]"},
		{"past the anchor (a keyring file that could not save it)", func(h *history) (Tally, Tally) {
			ledger := h.tally
			h.commit("a", true)
			anchor := h.tally
			h.commit("b", true)
			return ledger, anchor
		}, Settlement{ByIdentity: true, Committed: 1, Unsure: 1}, "[a b]"},
		{"not behind: past the ledger did not commit", func(h *history) (Tally, Tally) {
			h.commit("a", true)
			h.commit("a", true) // the same forget's record twice
			ledger := h.tally
			h.record(ledger, "x", true)
			return ledger, ledger
		}, Settlement{ByIdentity: true, Committed: 2, Uncommitted: 1}, "[a]"},
		// A record of an epoch retired since counts only on the chain,
		// which proves it; a v2 record (before tallies, MAC'd with the
		// root any keyring file derives) counts for nothing.
		{"retired epochs and records from before tallies", func(h *history) (Tally, Tally) {
			ledger := h.tally
			h.tally = h.retired(h.tally, "a")
			h.retired(h.tally, "x") // past the anchor, unproven
			old := mustRecord(h.t, h.j, Entry{Database: "db-1", Namespace: "users", Subject: "c", At: time.Unix(1, 0), Keys: []uint32{}, BindKeys: true})
			h.r.add(old, "db-1", true)
			return ledger, h.tally
		}, Settlement{ByIdentity: true, Committed: 1, Unproven: 1, Earlier: 1}, "[a]"},
		{"no forget tallied yet: records from before tallies count", func(h *history) (Tally, Tally) {
			h.tally = Tally{Count: 3, Since: 3}
			old := mustRecord(h.t, h.j, Entry{Database: "db-1", Namespace: "users", Subject: "c", At: time.Unix(1, 0), Keys: []uint32{}, BindKeys: true})
			h.r.add(old, "db-1", true)
			h.record(h.tally, "x", true) // a first tallied forget that rolled back
			return h.tally, h.tally
		}, Settlement{ByIdentity: true, Uncommitted: 1}, "[c]"},
		{"a ledger from before its tally: by count", func(h *history) (Tally, Tally) {
			h.tally = Tally{Count: 5, Since: 5}
			h.commit("a", true)
			return Tally{Count: 3, Since: 3}, h.tally
		}, Settlement{}, "[a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t)
			ledger, anchor := tc.run(h)
			if got := h.r.Settle("users", ledger, anchor); got != tc.want {
				t.Fatalf("settled %+v, want %+v", got, tc.want)
			}
			if got := h.forgotten("a", "b", "c", "x"); got != tc.forgotten {
				t.Fatalf("forgotten %s, want %s", got, tc.forgotten)
			}
		})
	}
}

// TestSettleWithoutJournal: with no journal, every forget on the anchor's
// tally past the ledger's is lost.
func TestSettleWithoutJournal(t *testing.T) {
	var r *Records
	ledger := Tally{Count: 2, Since: 0, Head: bytes.Repeat([]byte{1}, 32)}
	anchor := ledger.Add([]byte("a")).Add([]byte("b"))
	if got := r.Settle("users", ledger, anchor); got != (Settlement{ByIdentity: true, Lost: 2}) {
		t.Fatalf("settled %+v", got)
	}
	if got := r.Settle("users", Tally{Count: 1, Since: 1}, anchor); got != (Settlement{}) {
		t.Fatalf("a ledger from before its tally: %+v", got)
	}
}

// FuzzTally: no tally field panics the reader, and one it accepts is
// spelled back the same.
func FuzzTally(f *testing.F) {
	f.Add("0/0/-")
	f.Add("3/2/" + fmt.Sprintf("%064x", 7))
	f.Add("1/1/-")
	f.Fuzz(func(t *testing.T, s string) {
		if tl, ok := parseTally(s); ok && (tallyText(tl) != s || !tl.Valid()) {
			t.Fatalf("accepted %q as %+v", s, tl)
		}
	})
}

// TestLongestRecord: the longest records a store writes (a namespace of
// 256 bytes, 64 key versions, v2 and v3) read back: the reader's line
// bound is above them.
func TestLongestRecord(t *testing.T) {
	h := newHistory(t)
	ns := strings.Repeat("n", 256)
	keys := make([]uint32, MaxKeys)
	for i := range keys {
		keys[i] = 0x7fffff00 + uint32(i)
	}
	prev := Tally{Count: ^uint64(0) - 2, Since: ^uint64(0) - 3, Head: bytes.Repeat([]byte{0xff}, 32)}
	for _, e := range []Entry{{BindKeys: true}, {Chain: true, Prev: prev}} {
		e.Database, e.Namespace, e.Subject, e.At, e.Keys = strings.Repeat("d", 64), ns, "s", time.Unix(1<<40, 0), keys
		line := mustRecord(t, h.j, e)
		r := newRecords(h.j.keySet)
		if err := r.readLines(bytes.NewReader(line), e.Database); err != nil || r.Invalid != 0 || r.Count(ns) != 1 {
			t.Fatalf("a record of %d bytes: %d invalid, %v", len(line), r.Invalid, err)
		}
	}
}
