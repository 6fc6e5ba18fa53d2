package field

import (
	"context"
	"crypto/fips140"
	"errors"
	"testing"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestGrantColumn: a grant for notes.title opens the titles (bound to
// their owner) and fails on every other column's values, on a title moved
// to another owner, and on titles still in v3; it never seals.
func TestGrantColumn(t *testing.T) {
	ctx := context.Background()
	kr := newKR(t)
	title := mustColumn(t, kr, "notes", "title", Bind("owner"))
	body := mustColumn(t, kr, "notes", "body", Bind("owner"))
	row := RowInt(1).With("alice")
	t1, _ := title.SealString(row, "groceries")
	b1, _ := body.SealString(row, "milk, eggs")
	v3, _ := mustColumn(t, kr, "notes", "title", Bind("owner"), WithForms(fleetgate.New())).SealString(row, "old")

	g, err := kr.Grant([]keyring.GrantScope{{Table: "notes", Column: "title"}})
	if err != nil {
		t.Fatal(err)
	}
	mk := local.Generate()
	file, _ := g.Marshal(ctx, mk)
	g, err = keyring.UnmarshalGrant(ctx, file, mk)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := GrantColumn(g, "notes", "title", Bind("owner"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := reader.OpenString(row, t1); err != nil || got != "groceries" {
		t.Fatalf("the granted column: %q %v", got, err)
	}
	if _, err := reader.OpenString(RowInt(1).With("mallory"), t1); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("moved to another owner: %v", err)
	}
	if _, err := reader.OpenString(row, b1); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("a body value in the title column: %v", err)
	}
	if _, err := reader.OpenString(row, v3); !errors.Is(err, keyring.ErrNotGranted) && !fips140.Enabled() { // (the FIPS mode seals v4 only)
		t.Fatalf("a v3 title: %v", err)
	}
	if _, err := reader.SealString(row, "x"); !errors.Is(err, keyring.ErrGrantSeals) {
		t.Fatalf("a grant's column sealed: %v", err)
	}
	if _, err := GrantColumn(g, "notes", "body", Bind("owner")); !errors.Is(err, keyring.ErrNotGranted) {
		t.Fatalf("a column the grant does not name: %v", err)
	}
	if bound, _ := reader.Matches(row, t1); !bound {
		t.Fatal("Matches of a granted value")
	}
}
