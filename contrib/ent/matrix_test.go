package wardent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	wardent "github.com/wardlab/ward/contrib/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent/note"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// TestWriteMatrix drives every write path of the generated ent client on
// SQLite and PostgreSQL (docs/ADOPTING.md lists the cells): each seals the
// value for its entity and owner, refuses before anything is written, or
// is raw SQL — not intercepted, and what it writes fails to open.
func TestWriteMatrix(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	codec, err := wardent.New(kr, fields)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range clients(t, codec) {
		t.Run(name, func(t *testing.T) {
			c, raw := p.c, p.raw
			c.Schema.Create(ctx)
			t.Cleanup(func() { c.Note.Delete().Exec(ctx) })
			sealed := func(cell, id, want string) {
				t.Helper()
				n, err := c.Note.Get(ctx, id)
				if err != nil || n.Body != want {
					t.Fatalf("%s: %+v %v", cell, n, err)
				}
				if r, _ := raw.Note.Get(ctx, id); !strings.HasPrefix(r.Body, "w3:") {
					t.Fatalf("%s: stored %q", cell, r.Body)
				}
			}
			// Create, one and bulk (builders and MapCreateBulk).
			if _, err := c.Note.Create().SetID("a").SetUserID(1).SetBody("one").Save(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("create", "a", "one")
			if _, err := c.Note.CreateBulk(c.Note.Create().SetID("b1").SetUserID(1).SetBody("bulk 1"),
				c.Note.Create().SetID("b2").SetUserID(2).SetBody("bulk 2")).Save(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("create bulk", "b1", "bulk 1")
			sealed("create bulk", "b2", "bulk 2")
			ids := []string{"m1", "m2"}
			if _, err := c.Note.MapCreateBulk(ids, func(nc *ent.NoteCreate, i int) {
				nc.SetID(ids[i]).SetUserID(3).SetBody("mapped " + ids[i])
			}).Save(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("map create bulk", "m2", "mapped m2")
			// Update one: value, value from the entity, e-mail with its index.
			if _, err := c.Note.UpdateOneID("a").SetBody("two").Save(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("update one", "a", "two")
			n, _ := c.Note.Get(ctx, "a")
			if _, err := n.Update().SetEmail("A@Example.com").Save(ctx); err != nil {
				t.Fatal(err)
			}
			idx, _ := codec.Index("notes", "email", "a@example.COM")
			if got, err := c.Note.Query().Where(note.EmailIndex(idx)).Only(ctx); err != nil || got.ID != "a" || got.Email == nil || *got.Email != "A@Example.com" {
				t.Fatalf("e-mail and its index: %+v %v", got, err)
			}
			// Owner change, one entity: re-sealed in the same mutation.
			if _, err := c.Note.UpdateOneID("b1").SetUserID(7).Save(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("owner change", "b1", "bulk 1")
			// Refused before anything is written: bulk value, bulk owner,
			// a missing row key.
			if _, err := c.Note.Update().Where(note.UserID(3)).SetBody("x").Save(ctx); !errors.Is(err, wardent.ErrBulkUpdate) {
				t.Fatalf("bulk update: %v", err)
			}
			if _, err := c.Note.Update().Where(note.UserID(3)).SetUserID(9).Save(ctx); !errors.Is(err, wardent.ErrOwnerChange) {
				t.Fatalf("bulk owner change: %v", err)
			}
			if _, err := c.Note.Create().SetUserID(1).SetBody("x").Save(ctx); !errors.Is(err, wardent.ErrNoRowKey) {
				t.Fatalf("no row key: %v", err)
			}
			sealed("after refusals", "m1", "mapped m1")
			// Raw SQL through the driver: not intercepted; it fails to open.
			if _, err := raw.Note.UpdateOneID("m1").SetBody("plain").Save(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Note.Get(ctx, "m1"); !errors.Is(err, field.ErrPlaintext) {
				t.Fatalf("raw write: %v", err)
			}
		})
	}
}
