package wardent_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	wardent "github.com/wardlab/ward/contrib/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent/member"
	"github.com/wardlab/ward/contrib/internal/recordedtest"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// memberFields declares Member's e-mail with a recorded index; its v1
// form (no spare column) is how the application wrote it before.
var (
	memberFields   = []wardent.Field{{Type: "Member", Table: "members", Column: "email", IndexColumn: "email_index", SpareColumn: "email_index2"}}
	memberFieldsV1 = []wardent.Field{{Type: "Member", Table: "members", Column: "email", IndexColumn: "email_index"}}
)

// recordedDB is one database of TestRecordedIndex: the pool, its ent
// driver and ward's dialect.
type recordedDB struct {
	db      *sql.DB
	drv     *entsql.Driver
	dialect field.Dialect
}

func recordedDBs(t *testing.T) map[string]recordedDB {
	out := map[string]recordedDB{}
	open := func(name, driver, entDialect, dsn string) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		d, err := field.ParseDialect(driver)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = recordedDB{db: db, drv: entsql.OpenDB(entDialect, db), dialect: d}
	}
	// Writers queue for SQLite's write lock (immediate transactions, a
	// busy timeout), as a recorded index's writes expect.
	open("sqlite", "sqlite", "sqlite3", "file:"+filepath.Join(t.TempDir(), "members.db")+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if url := pgtest.URL(t); url != "" {
		open("postgres", "pgx", "postgres", url)
	}
	if url := mytest.URL(t); url != "" {
		open("mysql", "mysql", "mysql", mytest.DSN(t, url))
	}
	return out
}

// TestRecordedIndex: an ent application's v1 index is recorded as such
// (FromV1), moved to v2 by a re-key and, after a rotation, to the next
// epoch, while clients sign up (Create, CreateBulk, MapCreateBulk), move addresses
// (UpdateOne, UpdateOneID), all in transactions, and log in through Eq
// (the scenario of package recordedtest). A write outside a transaction,
// or through a driver that hides it, is refused; Index points a recorded
// index to Eq.
func TestRecordedIndex(t *testing.T) {
	ctx := context.Background()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	for name, rdb := range recordedDBs(t) {
		t.Run(name, func(t *testing.T) {
			raw := ent.NewClient(ent.Driver(rdb.drv))
			if err := raw.Schema.Create(ctx); err != nil {
				t.Fatal(err)
			}
			v1, err := wardent.New(kr, memberFieldsV1)
			if err != nil {
				t.Fatal(err)
			}
			before := ent.NewClient(ent.Driver(rdb.drv))
			before.Use(v1.Hook())
			seeded := recordedtest.Seeded(20)
			for i, e := range seeded {
				before.Member.Create().SetID(fmt.Sprintf("s%d", i)).SetEmail(e).ExecX(ctx)
			}
			app := newEntApp(t, rdb, kr)
			t.Logf("%d sign-ups during the re-keys", app.Run(t, seeded))
			app.refusals(t)
		})
	}
}

// entApp is one ent process with a recorded index.
type entApp struct {
	*recordedtest.App
	c     *ent.Client
	codec *wardent.Codec
	rdb   recordedDB
}

func newEntApp(t *testing.T, rdb recordedDB, kr *keyring.Keyring) *entApp {
	t.Helper()
	codec, err := wardent.New(kr, memberFields)
	if err != nil {
		t.Fatal(err)
	}
	a := &entApp{codec: codec, rdb: rdb, c: ent.NewClient(ent.Driver(rdb.drv))}
	a.c.Use(codec.Hook())
	a.c.Intercept(codec.Interceptor())
	a.App = recordedtest.Join(t, rdb.db, rdb.dialect, kr, recordedtest.Adapter{
		Record: codec.Record,
		Watch:  func(ctx context.Context, every time.Duration) { codec.Watch(ctx, every, nil) },
	})
	a.Find, a.SignUp, a.Refresh = a.find, a.signUp, codec.Refresh
	return a
}

// find returns the ID of the member with address email ("" for none; a
// member with another address is "found <address>").
func (a *entApp) find(email string) (string, error) {
	m, err := a.c.Member.Query().Where(a.codec.Eq("Member", "email", email)).Only(context.Background())
	switch {
	case ent.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	case field.NormalizeFold(m.Email) != field.NormalizeFold(email):
		return "found " + m.Email, nil
	}
	return m.ID, nil
}

// inTx runs fn in a transaction of the app's client.
func (a *entApp) inTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := a.c.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// signUp creates a member (Create, or CreateBulk or MapCreateBulk with a
// second one) and
// moves one in five to another address (UpdateOneID, or UpdateOne of the
// entity); it returns the addresses the members end with.
func (a *entApp) signUp(ctx context.Context, c, i int) ([]string, error) {
	email, id := fmt.Sprintf("New%d@Example.com", i*2+c/2), fmt.Sprintf("c%d-%d", c, i)
	emails := []string{email}
	var m *ent.Member
	err := a.inTx(ctx, func(tx *ent.Tx) error {
		var err error
		if c%2 == 0 {
			m, err = tx.Member.Create().SetID(id).SetEmail(email).Save(ctx)
			return err
		}
		emails = append(emails, fmt.Sprintf("Bulk%d-%d@Example.com", c, i))
		bulk := tx.Member.CreateBulk(tx.Member.Create().SetID(id).SetEmail(email), tx.Member.Create().SetID(id+"b").SetEmail(emails[1]))
		if c == 3 {
			bulk = tx.Member.MapCreateBulk(emails, func(mc *ent.MemberCreate, k int) {
				mc.SetID(id + strings.Repeat("b", k)).SetEmail(emails[k])
			})
		}
		ms, err := bulk.Save(ctx)
		if err == nil {
			m = ms[0]
		}
		return err
	})
	if err != nil || i%5 != 0 {
		return emails, err
	}
	moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
	if err := a.inTx(ctx, func(tx *ent.Tx) error {
		if c%2 == 0 {
			return tx.Member.UpdateOneID(id).SetEmail(moved).Exec(ctx)
		}
		return tx.Member.UpdateOne(m).SetEmail(moved).Exec(ctx)
	}); err != nil {
		return emails, nil
	}
	emails[0] = moved
	return emails, nil
}

// refusals: a write outside a transaction, or in one a driver wrapper
// hides, is refused and writes nothing; Index names Eq.
func (a *entApp) refusals(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := a.c.Member.Create().SetID("no-tx").SetEmail("notx@example.com").Exec(ctx); !errors.Is(err, wardent.ErrNoTx) {
		t.Fatalf("a write outside a transaction: %v", err)
	}
	hiding := ent.NewClient(ent.Driver(hidingDriver{a.rdb.drv}))
	hiding.Use(a.codec.Hook())
	tx, err := hiding.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Member.Create().SetID("hidden").SetEmail("hidden@example.com").Exec(ctx); err == nil {
		t.Fatal("a write through a driver that hides its transaction was not refused")
	}
	tx.Rollback()
	if n := a.c.Member.Query().Where(member.IDIn("no-tx", "hidden")).CountX(ctx); n != 0 {
		t.Fatalf("%d refused members written", n)
	}
	if _, err := a.codec.Index("members", "email", "a@example.com"); err == nil {
		t.Fatal("Index of a recorded index")
	}
}

// hidingDriver wraps a driver and passes on only ent's dialect interfaces,
// as a wrapper that does not forward QueryContext does.
type hidingDriver struct{ dialect.Driver }

func (d hidingDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	tx, err := d.Driver.Tx(ctx)
	return hidingTx{tx}, err
}

type hidingTx struct{ dialect.Tx }
