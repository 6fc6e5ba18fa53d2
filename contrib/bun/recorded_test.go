package wardbun_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/contrib/internal/recordedtest"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// Member has a recorded blind index: two index columns, the second the
// spare a re-key fills.
type Member struct {
	bun.BaseModel `bun:"table:bun_members"`
	ID            string       `bun:",pk"`
	Email         wardbun.Text `bun:"type:text"`
	EmailIndex    []byte       `bun:",unique" ward:"index:email"`
	EmailIndex2   []byte       `bun:",unique" ward:"index:email;spare"`
}

func (m *Member) BeforeAppendModel(ctx context.Context, q bun.Query) error {
	return codec.Seal(ctx, q, m)
}
func (m *Member) AfterScanRow(ctx context.Context) error { return codec.Open(ctx, m) }

// MemberV1 is the table as the application wrote it before: a v1 index
// (keyed by the keyring's root) and no spare field.
type MemberV1 struct {
	bun.BaseModel `bun:"table:bun_members"`
	ID            string       `bun:",pk"`
	Email         wardbun.Text `bun:"type:text"`
	EmailIndex    []byte       `ward:"index:email"`
}

func (m *MemberV1) BeforeAppendModel(ctx context.Context, q bun.Query) error {
	return codec.Seal(ctx, q, m)
}

// TestRecordedIndex: a bun application's v1 index is recorded as such
// (FromV1), moved to v2 by a re-key and, after a rotation, to the next
// epoch, while clients sign up (NewInsert in a transaction, Codec.Insert),
// move addresses (NewUpdate) and log in through Eq (the scenario of
// package recordedtest). A write outside a transaction is refused.
func TestRecordedIndex(t *testing.T) {
	ctx := context.Background()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	dbs := databases(t)
	// Writers queue for SQLite's write lock (immediate transactions, a
	// busy timeout), as a recorded index's writes expect.
	sq, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "members.db")+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	dbs["sqlite"] = bun.NewDB(sq, sqlitedialect.New())
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			codec = wardbun.New(db, kr)
			freshTables(t, db, (*Member)(nil))
			seeded := recordedtest.Seeded(20)
			for i, e := range seeded {
				if _, err := db.NewInsert().Model(&MemberV1{ID: fmt.Sprintf("s%d", i), Email: wardbun.NewText(e)}).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			app := newBunApp(t, db, kr)
			t.Logf("%d sign-ups during the re-keys", app.Run(t, seeded))
			if _, err := db.NewInsert().Model(&Member{ID: "no-tx", Email: wardbun.NewText("notx@example.com")}).Exec(ctx); !errors.Is(err, wardbun.ErrNoTx) {
				t.Fatalf("a write outside a transaction: %v", err)
			}
		})
	}
}

// bunApp is one bun process with a recorded index.
type bunApp struct {
	*recordedtest.App
	db *bun.DB
}

func newBunApp(t *testing.T, db *bun.DB, kr *keyring.Keyring) *bunApp {
	t.Helper()
	name := db.Dialect().Name().String()
	if name == "pg" {
		name = "postgres"
	}
	dialect, err := field.ParseDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	a := &bunApp{db: db}
	a.App = recordedtest.Join(t, db.DB, dialect, kr, recordedtest.Adapter{
		Record: func(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions) error {
			return codec.Record(ctx, lg, o, (*Member)(nil))
		},
		Watch: func(ctx context.Context, every time.Duration) { codec.Watch(ctx, every, nil) },
	})
	a.Table, a.Find, a.SignUp, a.Refresh = "bun_members", a.find, a.signUp, codec.Refresh
	return a
}

// find returns the ID of the member with address email ("" for none; a
// member with another address is "found <address>").
func (a *bunApp) find(email string) (string, error) {
	var m Member
	err := codec.Eq(a.db.NewSelect().Model(&m), &m, "Email", email).Scan(context.Background())
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	case field.NormalizeFold(m.Email.String()) != field.NormalizeFold(email):
		return "found " + m.Email.String(), nil
	}
	return m.ID, nil
}

// signUp creates a member (NewInsert in a transaction, or Codec.Insert)
// and moves one in five to another address (NewUpdate); it returns the
// address the member ends with.
func (a *bunApp) signUp(ctx context.Context, c, i int) ([]string, error) {
	email, id := fmt.Sprintf("New%d@Example.com", i*2+c/2), fmt.Sprintf("c%d-%d", c, i)
	m := &Member{ID: id, Email: wardbun.NewText(email)}
	var err error
	if c%2 == 0 {
		err = a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.NewInsert().Model(m).Exec(wardbun.InTx(ctx, tx))
			return err
		})
	} else {
		err = codec.Insert(ctx, a.db, m)
	}
	if err != nil || i%5 != 0 {
		return []string{email}, err
	}
	moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
	m.Email = wardbun.NewText(moved)
	if err := a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model(m).Column("email", "email_index", "email_index2").WherePK().Exec(wardbun.InTx(ctx, tx))
		return err
	}); err != nil {
		return []string{email}, nil
	}
	return []string{moved}, nil
}
