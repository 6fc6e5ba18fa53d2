package keycore

import (
	"bytes"
	"context"
	"testing"
)

// TestAnchorTallies: an anchor keeps, per counter, the tally of the
// highest count, through a save and a load; a malformed tally is refused;
// a counter from before tallies reads as a tally starting at its count.
func TestAnchorTallies(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	start := Tally{Count: 5, Since: 5}
	t6 := start.Add([]byte("alice"))
	t7 := t6.Add([]byte("bob"))
	epoch := kr.StateEpoch()
	for _, tl := range []Tally{t7, t6} { // a process that saved late: the higher count stays
		if err := kr.SetAnchor(ctx, "db-1", Anchor{Counter: 1, Epoch: epoch, Tallies: map[string]Tally{"n": tl}}); err != nil {
			t.Fatal(err)
		}
	}
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := back.Anchor("db-1"); !a.Tally("n").Equal(t7) || a.Tally("n").Equal(t6) {
		t.Fatalf("anchored tally %+v, want %+v", a.Tally("n"), t7)
	}
	if got := (Anchor{Counters: map[string]uint64{"old": 4}}).Tally("old"); !got.Equal(Tally{Count: 4, Since: 4}) {
		t.Fatalf("a counter from before tallies: %+v", got)
	}
	for _, bad := range []Tally{{Count: 6, Since: 5}, {Count: 6, Since: 5, Head: []byte("short")}, {Count: 4, Since: 5}, {Count: 5, Since: 5, Head: bytes.Repeat([]byte{1}, 32)}} {
		if err := kr.SetAnchor(ctx, "db-2", Anchor{Counter: 1, Epoch: epoch, Tallies: map[string]Tally{"n": bad}}); err == nil {
			t.Fatalf("a malformed tally %+v was anchored", bad)
		}
	}
	if NextHead(nil, []byte("x")) == nil || bytes.Equal(NextHead(nil, []byte("x")), NextHead(make([]byte, 32), []byte("y"))) {
		t.Fatal("heads")
	}
}
