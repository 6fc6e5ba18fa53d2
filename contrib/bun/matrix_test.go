package wardbun_test

import (
	"context"
	"errors"
	"strings"
	"sync"

	"testing"

	"github.com/uptrace/bun"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/keyring"
)

// TestWriteMatrix is the adopters issue's write-API matrix for bun: the
// model paths seal each value for its row; the paths that carry values
// bun formats itself (Set/SetColumn/Value with raw SQL, map models) are
// not intercepted — bun's hooks cannot see or refuse them — and what they
// wrote fails to open on read. An owner change that does not write the
// bound Text columns leaves them bound to the old owner (not intercepted:
// list them in Column). On SQLite, PostgreSQL and MariaDB (where bun's
// bulk update is refused by the database, writing nothing, and the upsert
// is ON DUPLICATE KEY UPDATE).
func TestWriteMatrix(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			codec = wardbun.New(db, kr)
			freshTables(t, db, (*Note)(nil))
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
			bulk := db.NewUpdate().Model(&many).Column("body").Bulk()
			upsert := db.NewInsert().Model(note("a", 1, "upsert")).On("CONFLICT (id) DO UPDATE").Set("body = EXCLUDED.body")
			if name == "mysql" {
				// bun's bulk UPDATE is a CTE of VALUES ROW(…), which MariaDB
				// refuses: the statement fails and writes nothing.
				if _, err := bulk.Exec(ctx); err == nil || body("b") != "slice" || body("c") != "slice" {
					t.Fatalf("bulk update on MariaDB: %v", err)
				}
				for _, m := range many {
					if _, err := db.NewUpdate().Model(m).Column("body").WherePK().Exec(ctx); err != nil {
						t.Fatal(err)
					}
				}
				upsert = db.NewInsert().Model(note("a", 1, "upsert")).On("DUPLICATE KEY UPDATE").Set("body = VALUES(body)")
			} else if _, err := bulk.Exec(ctx); err != nil {
				t.Fatalf("bulk update: %v", err)
			}
			if body("b") != "bulk" || body("c") != "bulk" {
				t.Fatalf("after the bulk update: %q %q", body("b"), body("c"))
			}
			if _, err := upsert.Exec(ctx); err != nil || body("a") != "upsert" {
				t.Fatalf("upsert: %v", err)
			}
			// An owner change with the bound column listed re-seals it.
			n, _ = read("a")
			n.UserID = 2
			if _, err := db.NewUpdate().Model(&n).Column("user_id", "body").WherePK().Exec(ctx); err != nil || body("a") != "upsert" {
				t.Fatalf("owner change with body: %v", err)
			}
			for _, id := range []string{"a", "b", "c"} {
				if !strings.HasPrefix(stored(id), "w4:") {
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

// Account has a database-assigned key (bigserial, AUTOINCREMENT) that its
// Text is bound to, and a UNIQUE blind index.
type Account struct {
	bun.BaseModel `bun:"table:bun_accounts"`
	ID            int64        `bun:",pk,autoincrement"`
	Email         wardbun.Text `bun:"type:text"` // nullable: written once the key is known
	EmailIndex    []byte       `bun:",unique" ward:"index:email"`
}

func (a *Account) BeforeAppendModel(ctx context.Context, q bun.Query) error {
	return codec.Seal(ctx, q, a)
}
func (a *Account) AfterScanRow(ctx context.Context) error { return codec.Open(ctx, a) }

// statements records every statement a bun.DB sends (bun formats the
// arguments into the text).
type statements struct {
	mu  sync.Mutex
	all []string
}

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (s *statements) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, e.Query)
}

// TestAssignedKeys adopts a table whose key the database assigns:
// Codec.Insert inserts the value as NULL and seals it for the assigned key
// in the same transaction (one row, a slice, inside the caller's
// transaction); a plain insert is refused; no statement carries the
// plaintext; uniqueness and search go through the blind index.
func TestAssignedKeys(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			sent := &statements{}
			db := db.WithQueryHook(sent)
			codec = wardbun.New(db, kr)
			freshTables(t, db, (*Account)(nil))

			one := &Account{Email: wardbun.NewText("one@example.com")}
			if err := codec.Insert(ctx, db, one); err != nil || one.ID == 0 {
				t.Fatalf("insert: %+v %v", one, err)
			}
			many := []Account{{Email: wardbun.NewText("two@example.com")}, {Email: wardbun.NewText("three@example.com")}}
			if err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return codec.Insert(ctx, tx, &many)
			}); err != nil {
				t.Fatal(err)
			}
			for _, a := range append(many, *one) {
				var got Account
				if err := db.NewSelect().Model(&got).Where("id = ?", a.ID).Scan(ctx); err != nil || got.Email.String() != a.Email.String() {
					t.Fatalf("account %d: %+v %v", a.ID, got, err)
				}
				var raw string
				db.NewRaw("SELECT email FROM bun_accounts WHERE id = ?", a.ID).Scan(ctx, &raw)
				if !strings.HasPrefix(raw, "w4:") {
					t.Fatalf("account %d stored %q", a.ID, raw)
				}
			}
			// Bound to its row: a value copied to another account fails.
			db.NewRaw("UPDATE bun_accounts SET email = (SELECT email FROM bun_accounts WHERE id = ?) WHERE id = ?", one.ID, many[0].ID).Exec(ctx)
			if err := db.NewSelect().Model(&Account{}).Where("id = ?", many[0].ID).Scan(ctx); !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("a value copied to another row: %v", err)
			}
			// Refused: a duplicate address (the UNIQUE index, nothing
			// stays), a plain insert (nothing written).
			if err := codec.Insert(ctx, db, &Account{Email: wardbun.NewText("ONE@example.com")}); err == nil {
				t.Fatal("a duplicate address was accepted")
			}
			if _, err := db.NewInsert().Model(&Account{Email: wardbun.NewText("four@example.com")}).Exec(ctx); !errors.Is(err, wardbun.ErrNoRowKey) {
				t.Fatalf("plain insert: %v", err)
			}
			if n, _ := db.NewSelect().Model((*Account)(nil)).Count(ctx); n != 3 {
				t.Fatalf("%d accounts", n)
			}
			var found Account
			if err := codec.Eq(db.NewSelect().Model(&found), &found, "Email", "Three@Example.com").Scan(ctx); err != nil || found.ID != many[1].ID {
				t.Fatalf("search by the index: %+v %v", found, err)
			}
			if err := codec.Eq(db.NewSelect().Model(&found), &found, "ID", "1").Scan(ctx); err == nil || !strings.Contains(err.Error(), "no blind index of ID") {
				t.Fatalf("Eq on a field without an index: %v", err)
			}
			sent.mu.Lock()
			defer sent.mu.Unlock()
			if len(sent.all) < 5 || !strings.Contains(strings.Join(sent.all, "\n"), "INSERT INTO") {
				t.Fatalf("the query hook saw %d statements", len(sent.all))
			}
			for _, q := range sent.all {
				if strings.Contains(q, "@example.com") {
					t.Fatalf("a statement carried a plaintext address: %s", q)
				}
			}
		})
	}
}
