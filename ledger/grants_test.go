package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
)

// TestSubjectColumns: of the recorded columns, those sealed under subject
// keys that the scopes name, and no other.
func TestSubjectColumns(t *testing.T) {
	st := &State{Columns: []Column{
		{Table: "messages", Column: "body", Subject: "user_id", Namespace: "users"},
		{Table: "notes", Column: "title"},
		{Table: "files", Column: "name", Subject: "owner", Namespace: "owners"},
	}}
	got := st.SubjectColumns([]string{"messages.body", "notes.title"})
	if len(got) != 1 || got[0].Namespace != "users" {
		t.Fatalf("%+v", got)
	}
	if got := st.SubjectColumns(nil); len(got) != 0 {
		t.Fatalf("no scope: %+v", got)
	}
}

// TestRaiseKeyFloor: a revocation raises a namespace's key floor once,
// however often it runs again (after a kill), and each revoked grant once;
// the count is anchored with the ledger, and a grant the ledger does not
// record raises nothing.
func TestRaiseKeyFloor(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		now := time.Now()
		for _, id := range []string{"g-1", "g-2"} {
			if err := l.RecordGrant(ctx, kr, Grant{ID: id, Scopes: []string{"messages.body"}, Keys: []keyring.KeyID{kr.Primary().ID}, Issued: now}); err != nil {
				t.Fatal(err)
			}
		}
		for _, step := range []struct {
			id, ns string
			want   uint64
		}{{"g-1", "users", 1}, {"g-1", "users", 1}, {"g-1", "owners", 1}, {"g-2", "users", 2}, {"g-2", "users", 2}} {
			if k, err := l.RaiseKeyFloor(ctx, kr, step.id, step.ns); err != nil || k != step.want {
				t.Fatalf("%s raises %s: %d %v, want %d", step.id, step.ns, k, err, step.want)
			}
		}
		st, err := l.Verified(ctx, kr)
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := core(kr).Anchor(st.Database); a.Counters[KeyFloorCounter("users")] != 2 {
			t.Fatalf("the anchor's count: %v", a.Counters)
		}
		if _, err := l.RaiseKeyFloor(ctx, kr, "g-none", "users"); !errors.Is(err, ErrUnknownGrant) {
			t.Fatalf("an unknown grant: %v", err)
		}
	})
}
