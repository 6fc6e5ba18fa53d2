package wardbun_test

import (
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"

	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

var codec *wardbun.Codec // set per database in the test

type Note struct {
	bun.BaseModel `bun:"table:bun_notes"`
	ID            string `bun:",pk"`
	UserID        int64
	Body          wardbun.Text `bun:"type:text" ward:"bind:user_id"`
	Email         wardbun.Text `bun:"type:text"`
	EmailIndex    []byte       `ward:"index:email"`
}

func (n *Note) BeforeAppendModel(ctx context.Context, q bun.Query) error {
	return codec.Seal(ctx, q, n)
}
func (n *Note) AfterScanRow(ctx context.Context) error { return codec.Open(ctx, n) }

// Plain has no hooks: its Text must never reach the database.
type Plain struct {
	bun.BaseModel `bun:"table:bun_plain"`
	ID            string       `bun:",pk"`
	Body          wardbun.Text `bun:"type:text"`
}

func databases(t *testing.T) map[string]*bun.DB {
	out := map[string]*bun.DB{}
	sq, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	out["sqlite"] = bun.NewDB(sq, sqlitedialect.New())
	if url := pgtest.URL(t); url != "" {
		pg, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		out["postgres"] = bun.NewDB(pg, pgdialect.New())
	} else {
		t.Log("WARD_TEST_POSTGRES_URL is not set: PostgreSQL skipped")
	}
	if url := mytest.URL(t); url != "" {
		my, err := sql.Open("mysql", mytest.DSN(t, url))
		if err != nil {
			t.Fatal(err)
		}
		out["mysql"] = bun.NewDB(my, mysqldialect.New())
	} else {
		t.Log("WARD_TEST_MYSQL_URL is not set: MariaDB skipped")
	}
	return out
}

// freshTables drops and creates each model's table, and drops it again
// when the test ends.
func freshTables(t *testing.T, db *bun.DB, models ...any) {
	t.Helper()
	ctx := context.Background()
	for _, m := range models {
		db.NewDropTable().Model(m).IfExists().Exec(ctx)
		if _, err := db.NewCreateTable().Model(m).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.NewDropTable().Model(m).IfExists().Exec(ctx) })
	}
}

func TestBun(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			codec = wardbun.New(db, kr)
			freshTables(t, db, (*Note)(nil), (*Plain)(nil))
			notes := []Note{{ID: "n1", UserID: 1, Body: wardbun.NewText("milk, eggs"), Email: wardbun.NewText("Alice@Example.com")},
				{ID: "n2", UserID: 2, Body: wardbun.NewText(""), Email: wardbun.Null()}}
			for i := range notes {
				if _, err := db.NewInsert().Model(&notes[i]).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var raw struct {
				Body  string
				Email sql.NullString
			}
			db.NewRaw("SELECT body, email FROM bun_notes WHERE id = 'n2'").Scan(ctx, &raw.Body, &raw.Email)
			if raw.Email.Valid || len(raw.Body) < 40 || raw.Body[:3] != "w4:" {
				t.Fatalf("stored: %+v", raw)
			}
			var got Note
			if err := db.NewSelect().Model(&got).Where("id = ?", "n1").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if got.Body.String() != "milk, eggs" || got.Email.String() != "Alice@Example.com" {
				t.Fatalf("read back: %+v", got)
			}
			idx, _ := codec.Index("bun_notes", "email", "alice@example.COM")
			var found Note
			if err := db.NewSelect().Model(&found).Where("email_index = ?", idx).Scan(ctx); err != nil || found.ID != "n1" {
				t.Fatalf("blind index: %+v %v", found, err)
			}
			db.NewRaw("UPDATE bun_notes SET user_id = 2 WHERE id = 'n1'").Exec(ctx)
			var moved Note
			err := db.NewSelect().Model(&moved).Where("id = ?", "n1").Scan(ctx)
			var oe *field.OpenError
			if !errors.Is(err, keyring.ErrWrongContext) || !errors.As(err, &oe) || oe.Column != "body" {
				t.Fatalf("re-pointed owner: %v", err)
			}
			if _, err := db.NewInsert().Model(&Note{UserID: 1, Body: wardbun.NewText("x")}).Exec(ctx); !errors.Is(err, wardbun.ErrNoRowKey) {
				t.Fatalf("no key: %v", err)
			}
			// bun turns the Valuer's ErrNotSealed into an invalid query.
			if _, err := db.NewInsert().Model(&Plain{ID: "p", Body: wardbun.NewText("secret")}).Exec(ctx); err == nil {
				t.Fatal("a model without hooks wrote its plaintext")
			}
			if n, _ := db.NewSelect().Model((*Plain)(nil)).Count(ctx); n != 0 {
				t.Fatalf("%d plaintext rows written", n)
			}
			if _, err := wardbun.NewText("secret").Value(); !errors.Is(err, wardbun.ErrNotSealed) {
				t.Fatal(err)
			}
		})
	}
}
