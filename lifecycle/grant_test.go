package lifecycle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// TestGrantHoldsItsKeys: while an unrevoked grant derives from a key,
// retiring it is refused even once no value is sealed under it; the
// grant opens what was sealed before a rotation and re-seal and nothing
// sealed after; once revoked, the key retires.
func TestGrantHoldsItsKeys(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 5)
		old := a.kr.Primary().ID
		g, err := a.kr.Grant([]keyring.GrantScope{{Table: a.col.Table(), Column: "body"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.db.Ledger.RecordGrant(ctx, a.kr, ledger.GrantOf(g)); err != nil {
			t.Fatal(err)
		}
		reader, err := field.GrantColumn(g, a.col.Table(), "body")
		if err != nil {
			t.Fatal(err)
		}
		before, _ := a.col.Seal(field.RowInt(1), []byte("before"))
		r, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute})
		if err != nil || !r.Promoted || r.Columns[0].Stats.Resealed != 5 {
			t.Fatalf("rotate: %+v %v", r, err)
		}
		if got, err := reader.OpenString(field.RowInt(1), before); err != nil || got != "before" {
			t.Fatalf("a copy taken before the re-seal: %q %v", got, err)
		}
		after, _ := a.col.Seal(field.RowInt(1), []byte("after"))
		if _, err := reader.OpenString(field.RowInt(1), after); !errors.Is(err, keyring.ErrUnknownKey) {
			t.Fatalf("a value sealed after the rotation: %v", err)
		}
		var refs *lifecycle.ReferencedError
		_, err = lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old)
		if !errors.As(err, &refs) || len(refs.References) != 1 || !strings.Contains(refs.References[0].What, g.ID()) {
			t.Fatalf("retire under a live grant: %v", err)
		}
		rec, err := a.db.Ledger.RevokeGrant(ctx, a.kr, g.ID(), time.Now())
		if err != nil || rec.Live() {
			t.Fatalf("revoke: %+v %v", rec, err)
		}
		if _, err := a.db.Ledger.RevokeGrant(ctx, a.kr, "g-unknown", time.Now()); !errors.Is(err, ledger.ErrUnknownGrant) {
			t.Fatalf("revoking an unknown grant: %v", err)
		}
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); err != nil {
			t.Fatalf("retire once revoked: %v", err)
		}
	})
}
