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
				if r, _ := raw.Note.Get(ctx, id); !strings.HasPrefix(r.Body, "w4:") {
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
			// Upsert: the inserted row's sealed value, on both paths.
			if err := c.Note.Create().SetID("u").SetUserID(1).SetBody("inserted").
				OnConflictColumns(note.FieldID).UpdateNewValues().Exec(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("upsert, insert", "u", "inserted")
			if err := c.Note.Create().SetID("u").SetUserID(1).SetBody("upserted").
				OnConflictColumns(note.FieldID).UpdateBody().Exec(ctx); err != nil {
				t.Fatal(err)
			}
			sealed("upsert, update", "u", "upserted")
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
			// An upsert's own SET of a value is SQL ent builds outside the
			// mutation: not intercepted either; it fails to open.
			if err := c.Note.Create().SetID("u").SetUserID(1).SetBody("x").
				OnConflictColumns(note.FieldID).Update(func(u *ent.NoteUpsert) { u.SetBody("plain") }).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Note.Get(ctx, "u"); !errors.Is(err, field.ErrPlaintext) {
				t.Fatalf("upsert with its own value: %v", err)
			}
		})
	}
}

// TestAssignedKeys adopts a table whose integer ID the database assigns
// (bigserial, AUTOINCREMENT) and whose e-mail is UNIQUE through its blind
// index: a create in a transaction inserts the e-mail as NULL, then seals
// it for the assigned ID and writes it in the same transaction; outside a
// transaction it is refused before anything is written.
func TestAssignedKeys(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	codec, err := wardent.New(kr, []wardent.Field{{Type: "Account", Table: "accounts", Column: "email", IndexColumn: "email_index"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range clients(t, codec) {
		t.Run(name, func(t *testing.T) {
			c, raw := p.c, p.raw
			if err := c.Schema.Create(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Account.Delete().Exec(ctx) })
			inTx := func(f func(tx *ent.Tx) error) error {
				tx, err := c.Tx(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := f(tx); err != nil {
					tx.Rollback()
					return err
				}
				return tx.Commit()
			}
			var one *ent.Account
			if err := inTx(func(tx *ent.Tx) (err error) {
				one, err = tx.Account.Create().SetEmail("one@example.com").Save(ctx)
				return err
			}); err != nil || one.ID == 0 || one.Email == nil || *one.Email != "one@example.com" {
				t.Fatalf("create: %+v %v", one, err)
			}
			var many []*ent.Account
			if err := inTx(func(tx *ent.Tx) (err error) {
				many, err = tx.Account.CreateBulk(tx.Account.Create().SetEmail("two@example.com"),
					tx.Account.Create().SetEmail("three@example.com")).Save(ctx)
				return err
			}); err != nil || len(many) != 2 {
				t.Fatalf("create bulk: %v", err)
			}
			for _, a := range append(many, one) {
				got, err := c.Account.Get(ctx, a.ID)
				if err != nil || got.Email == nil || *got.Email != *a.Email {
					t.Fatalf("account %d: %+v %v", a.ID, got, err)
				}
				if r, _ := raw.Account.Get(ctx, a.ID); r.Email == nil || !strings.HasPrefix(*r.Email, "w4:") {
					t.Fatalf("account %d stored %v", a.ID, r.Email)
				}
			}
			// Bound to its row: a value copied to another account fails.
			r, _ := raw.Account.Get(ctx, one.ID)
			raw.Account.UpdateOneID(many[0].ID).SetEmail(*r.Email).ExecX(ctx)
			if _, err := c.Account.Get(ctx, many[0].ID); !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("a value copied to another row: %v", err)
			}
			// Uniqueness through the index: a second sign-up is refused and
			// nothing of it stays; search reads the index.
			if err := inTx(func(tx *ent.Tx) error {
				_, err := tx.Account.Create().SetEmail("ONE@example.com").Save(ctx)
				return err
			}); err == nil {
				t.Fatal("a duplicate address was accepted")
			}
			// Outside a transaction: refused, nothing written.
			if _, err := c.Account.Create().SetEmail("four@example.com").Save(ctx); !errors.Is(err, wardent.ErrNoRowKey) {
				t.Fatalf("outside a transaction: %v", err)
			}
			if n := raw.Account.Query().CountX(ctx); n != 3 {
				t.Fatalf("%d accounts", n)
			}
			// The plaintext never reached the database, not even inside
			// the transaction (the insert carried NULL).
			if sent := p.sent.String(); !strings.Contains(sent, "INSERT") || strings.Contains(sent, "@example.com") {
				t.Fatalf("the statements sent carry a plaintext address:\n%s", sent)
			}
			if got, err := c.Account.Query().Where(codec.Eq("Account", "email", "Three@Example.com")).Only(ctx); err != nil || got.ID != many[1].ID {
				t.Fatalf("search by the index: %+v %v", got, err)
			}
			if _, err := c.Account.Query().Where(codec.Eq("Account", "id", "1")).Only(ctx); err == nil || !strings.Contains(err.Error(), "no blind index") {
				t.Fatalf("Eq on a field without an index: %v", err)
			}
		})
	}
}
