package wardbun_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/keyring"
)

// TestWriteMatrix is the adopters issue's write-API matrix for bun: the
// model paths seal each value for its row; the paths that carry values
// bun formats itself (Set/SetColumn/Value with raw SQL, map models) are
// not intercepted — bun's hooks cannot see or refuse them — and what they
// wrote fails to open on read. An owner change that does not write the
// bound Text columns leaves them bound to the old owner (not intercepted:
// list them in Column). On SQLite and PostgreSQL.
func TestWriteMatrix(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			codec = wardbun.New(db, kr)
			db.NewDropTable().Model((*Note)(nil)).IfExists().Exec(ctx)
			if _, err := db.NewCreateTable().Model((*Note)(nil)).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.NewDropTable().Model((*Note)(nil)).IfExists().Exec(ctx) })
			read := func(id string) (Note, error) {
				var n Note
				err := db.NewSelect().Model(&n).Where("id = ?", id).Scan(ctx)
				return n, err
			}
			body := func(id string) string {
				t.Helper()
				n, err := read(id)
				if err != nil {
					t.Fatalf("reading %s: %v", id, err)
				}
				return n.Body.String()
			}
			stored := func(id string) string {
				var s string
				db.NewRaw("SELECT body FROM bun_notes WHERE id = ?", id).Scan(ctx, &s)
				return s
			}
			note := func(id string, user int64, b string) *Note {
				return &Note{ID: id, UserID: user, Body: wardbun.NewText(b), Email: wardbun.NewText(id + "@example.com")}
			}

			// Sealed: insert (model, slice), update (model, Column, Bulk),
			// upsert taking the inserted row's value.
			if _, err := db.NewInsert().Model(note("a", 1, "insert")).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			many := []*Note{note("b", 1, "slice"), note("c", 1, "slice")}
			if _, err := db.NewInsert().Model(&many).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			n, _ := read("a")
			n.Body = wardbun.NewText("update")
			if _, err := db.NewUpdate().Model(&n).WherePK().Exec(ctx); err != nil || body("a") != "update" {
				t.Fatalf("update: %v", err)
			}
			n.Body = wardbun.NewText("update column")
			if _, err := db.NewUpdate().Model(&n).Column("body").WherePK().Exec(ctx); err != nil || body("a") != "update column" {
				t.Fatalf("update column: %v", err)
			}
			for _, m := range many {
				m.Body = wardbun.NewText("bulk")
			}
			if _, err := db.NewUpdate().Model(&many).Column("body").Bulk().Exec(ctx); err != nil || body("b") != "bulk" || body("c") != "bulk" {
				t.Fatalf("bulk update: %v", err)
			}
			if _, err := db.NewInsert().Model(note("a", 1, "upsert")).On("CONFLICT (id) DO UPDATE").Set("body = EXCLUDED.body").Exec(ctx); err != nil || body("a") != "upsert" {
				t.Fatalf("upsert: %v", err)
			}
			// An owner change with the bound column listed re-seals it.
			n, _ = read("a")
			n.UserID = 2
			if _, err := db.NewUpdate().Model(&n).Column("user_id", "body").WherePK().Exec(ctx); err != nil || body("a") != "upsert" {
				t.Fatalf("owner change with body: %v", err)
			}
			for _, id := range []string{"a", "b", "c"} {
				if !strings.HasPrefix(stored(id), "w3:") {
					t.Fatalf("%s stored %q", id, stored(id))
				}
			}

			// Not intercepted: raw Set, map models, an owner change that
			// leaves the bound column out. What they write fails to open.
			db.NewUpdate().Model((*Note)(nil)).Set("body = ?", "raw set").Where("id = ?", "b").Exec(ctx)
			if _, err := read("b"); err == nil || !strings.Contains(err.Error(), "not a ward ciphertext") {
				t.Fatalf("raw Set read back: %v", err)
			}
			db.NewInsert().Model(&map[string]any{"id": "m", "user_id": 1, "body": "map model"}).TableExpr("bun_notes").Exec(ctx)
			if _, err := read("m"); err == nil || !strings.Contains(err.Error(), "not a ward ciphertext") {
				t.Fatalf("map model read back: %v", err)
			}
			c, _ := read("c")
			c.UserID = 3
			db.NewUpdate().Model(&c).Column("user_id").WherePK().Exec(ctx)
			if _, err := read("c"); !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("owner change without the bound column: %v", err)
			}
		})
	}
}
