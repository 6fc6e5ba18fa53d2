package subject

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestKeyFloor: the floor of each count of raises, and the refusal past
// the last band.
func TestKeyFloor(t *testing.T) {
	for _, c := range []struct {
		k    uint64
		want uint32
	}{{0, 0}, {1, 1<<31 + 1<<23}, {255, 1<<31 + 255<<23}} {
		if got, err := KeyFloor(c.k); err != nil || got != c.want {
			t.Errorf("KeyFloor(%d) = %d %v, want %d", c.k, got, err, c.want)
		}
	}
	if _, err := KeyFloor(256); err == nil {
		t.Error("KeyFloor(256) has room")
	}
}

// TestKeyFloorVersions: once a revocation raised the floor, RotateAll
// gives every subject a version above it, a new subject's first version
// is drawn above it, and a subject whose versions above it a database
// writer deleted gets a new one above it before anything is sealed; what
// was sealed under the older versions still opens.
func TestKeyFloorVersions(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Hour)
		col := e.column(t, s)
		e.insert(t, col, 1, "alice", "before")
		if err := e.ledger.RecordGrant(ctx, e.kr, ledger.Grant{ID: "g-1", Scopes: []string{"messages.body"}, Keys: []keyring.KeyID{e.kr.Primary().ID}, Issued: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ledger.RaiseKeyFloor(ctx, e.kr, "g-1", "users"); err != nil {
			t.Fatal(err)
		}
		floor, _ := KeyFloor(1)
		if _, err := s.RotateAll(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := s.CurrentVersion("alice"); err != nil || v < floor {
			t.Fatalf("alice after the re-key: version %d %v, floor %d", v, err, floor)
		}
		e.insert(t, col, 2, "bob", "new")
		if v, err := s.CurrentVersion("bob"); err != nil || v < floor {
			t.Fatalf("a new subject's first version %d %v, floor %d", v, err, floor)
		}
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = 'alice' AND version >= ?`, e.keys), int64(floor))
		fresh := e.store(t, time.Hour)
		e.insert(t, e.column(t, fresh), 3, "alice", "after")
		if v, err := fresh.CurrentVersion("alice"); err != nil || v < floor {
			t.Fatalf("alice after the writer's deletion: version %d %v, floor %d", v, err, floor)
		}
		for id, want := range map[int64]string{1: "before", 3: "after"} {
			if got, err := e.read(t, e.column(t, fresh), id); err != nil || got != want {
				t.Fatalf("message %d: %q %v", id, got, err)
			}
		}
	})
}
