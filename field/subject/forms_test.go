package subject

import (
	"slices"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/keycore"
)

// TestPerSubjectWaitsForTheFleet: a PerSubject column with a gate seals
// under keyring keys — which a process without subject keys opens — and
// creates no subject key until the fleet opens the subject form; then it
// seals under the subject's key, and both kinds keep opening.
func TestPerSubjectWaitsForTheFleet(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		s := e.store(t, 0)
		g := fleetgate.New()
		col, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(s, "user_id"), field.WithForms(g))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(g.Wanted(), fleetgate.Subject("messages", "body")) {
			t.Fatalf("the column wants %v", g.Wanted())
		}
		plainCol, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id")) // an older process: no subject keys
		if err != nil {
			t.Fatal(err)
		}
		e.insert(t, col, 1, "alice", "before")
		if got, err := e.read(t, plainCol, 1); err != nil || got != "before" {
			t.Fatalf("a process without subject keys reads %q, %v", got, err)
		}
		if subs, err := s.Subjects(t.Context()); err != nil || len(subs) != 0 {
			t.Fatalf("a subject key was created before the form opened: %v %v", subs, err)
		}
		g.SetOpen([]fleetgate.Form{fleetgate.Subject("messages", "body")})
		e.insert(t, col, 2, "alice", "after")
		ct, _ := col.SealString(field.RowInt(3).With("alice"), "x")
		if !keycore.IsSubjectSealed(ct.Bytes()) {
			t.Fatal("after the form opened the column still seals under keyring keys")
		}
		for id, want := range map[int64]string{1: "before", 2: "after"} {
			if got, err := e.read(t, col, id); err != nil || got != want {
				t.Fatalf("row %d: %q %v", id, got, err)
			}
		}
	})
}
