package wardent_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	wardent "github.com/wardlab/ward/contrib/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent/member"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/forms"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
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
// epoch, while clients sign up (Create, CreateBulk), move addresses
// (UpdateOne, UpdateOneID), all in transactions, and log in through Eq:
// every log-in finds its member throughout, no address gets two members,
// and after each re-key every value is in the current column under the
// current epoch and the other column is empty. A write outside a
// transaction, or through a driver that hides it, is refused; Index
// points a recorded index to Eq.
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
			var seeded []string
			for i := range 20 {
				seeded = append(seeded, fmt.Sprintf("Seed%d@Example.com", i))
				before.Member.Create().SetID(fmt.Sprintf("s%d", i)).SetEmail(seeded[i]).ExecX(ctx)
			}
			app := newEntApp(t, rdb, kr)
			for i, e := range seeded {
				app.mustFind(t, e, fmt.Sprintf("s%d", i))
			}
			stop := make(chan struct{})
			missed, wait := app.traffic(t, seeded, stop)
			t.Cleanup(func() {
				select {
				case <-stop:
				default:
					close(stop)
					wait()
				}
			})
			app.rekey(t, 0)
			if _, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{app.d}, lifecycle.RotateOptions{Wait: time.Minute, Fleet: app.opts.Fleet}); err != nil {
				t.Fatal(err)
			}
			app.rekey(t, app.epoch)
			close(stop)
			signed := wait()
			if n := missed.Load(); n > 0 {
				t.Fatalf("%d log-ins found nobody or someone else during the re-keys", n)
			}
			if len(signed) == 0 {
				t.Fatal("no sign-up succeeded during the re-keys")
			}
			t.Logf("%d sign-ups during the re-keys", len(signed))
			app.check(t, append(seeded, signed...))
			app.refusals(t)
		})
	}
}

// entApp is one ent process with a recorded index, registered in its
// fleet.
type entApp struct {
	c     *ent.Client
	codec *wardent.Codec
	rdb   recordedDB
	kr    *keyring.Keyring
	d     lifecycle.Database
	opts  lifecycle.IndexRekeyOptions
	epoch keyring.KeyID // the index's, after the last re-key
}

func newEntApp(t *testing.T, rdb recordedDB, kr *keyring.Keyring) *entApp {
	t.Helper()
	ctx := context.Background()
	codec, err := wardent.New(kr, memberFields)
	if err != nil {
		t.Fatal(err)
	}
	lg := &ledger.Ledger{DB: rdb.db, Dialect: rdb.dialect}
	// One keyring serves a database per subtest: each is adopted, as an
	// operator adopts a new database.
	if _, err := lg.Adopt(ctx, kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
		t.Fatal(err)
	}
	gate := forms.New()
	if err := codec.Record(ctx, lg, ledger.IndexerOptions{Gate: gate, FromV1: true}); err != nil {
		t.Fatal(err)
	}
	reg := &fleet.Registry{DB: rdb.db, Dialect: rdb.dialect, Ledger: lg, Gate: gate}
	m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go codec.Watch(wctx, 20*time.Millisecond, nil)
	t.Cleanup(func() { cancel(); m.Leave(context.Background()) })
	c := ent.NewClient(ent.Driver(rdb.drv))
	c.Use(codec.Hook())
	c.Intercept(codec.Interceptor())
	return &entApp{c: c, codec: codec, rdb: rdb, kr: kr, d: lifecycle.Database{Name: rdb.dialect.String(), DB: rdb.db, Dialect: rdb.dialect, Ledger: lg},
		opts: lifecycle.IndexRekeyOptions{Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}, Wait: time.Minute}}
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

func (a *entApp) mustFind(t *testing.T, email, id string) {
	t.Helper()
	if got, err := a.find(email); err != nil || got != id {
		t.Fatalf("%s: found %q, %v; want %s", email, got, err, id)
	}
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

// signUp creates a member (Create, or CreateBulk with a second one) and
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
		ms, err := tx.Member.CreateBulk(tx.Member.Create().SetID(id).SetEmail(email), tx.Member.Create().SetID(id+"b").SetEmail(emails[1])).Save(ctx)
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

// traffic signs up new members (each address tried by two clients at
// once) and logs the seeded ones in until stop closes; wait returns the
// addresses signed up.
func (a *entApp) traffic(t *testing.T, seeded []string, stop chan struct{}) (missed *atomic.Int64, wait func() []string) {
	missed = &atomic.Int64{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var signed []string
	for c := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := (i*7 + c) % len(seeded)
				if id, err := a.find(seeded[n]); err == nil && id != fmt.Sprintf("s%d", n) {
					missed.Add(1)
					t.Errorf("log-in of %s found %q", seeded[n], id)
				}
				time.Sleep(time.Millisecond) // SQLite's writers would starve the re-key's
				if emails, err := a.signUp(context.Background(), c, i); err == nil {
					mu.Lock()
					signed = append(signed, emails...)
					mu.Unlock()
				}
			}
		})
	}
	return missed, func() []string { wg.Wait(); return signed }
}

// rekey re-keys the index away from epoch from and checks the result.
func (a *entApp) rekey(t *testing.T, from keyring.KeyID) {
	t.Helper()
	res, err := lifecycle.RekeyIndex(context.Background(), a.kr, a.d, "members", "email", "", a.opts)
	if err != nil || res.From != from || res.To != a.kr.Primary().ID || res.Index.Rekey != nil {
		t.Fatalf("re-key from %v: %+v %v", from, res, err)
	}
	a.epoch = res.To
}

// check: every address signed up has one member, found by Eq; every
// stored index is v2 under the current epoch in the current column.
func (a *entApp) check(t *testing.T, emails []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := lifecycle.RekeyIndex(ctx, a.kr, a.d, "members", "email", "", a.opts); err != nil {
		t.Fatal(err) // clears a write in flight across the switch
	}
	if err := a.codec.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.d.Ledger.Verified(ctx, a.kr)
	if err != nil || len(st.Indexes) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	cur, other := st.Indexes[0].Columns()
	rows, err := a.rdb.db.QueryContext(ctx, fmt.Sprintf("SELECT id, %s, %s FROM members", cur, other))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var v, o []byte
		if err := rows.Scan(&id, &v, &o); err != nil {
			t.Fatal(err)
		}
		if epoch, err := field.IndexEpoch(v); err != nil || epoch != a.kr.Primary().ID || o != nil {
			t.Fatalf("member %s: index %x (epoch %v, %v), other column %x", id, v, epoch, err, o)
		}
		n++
	}
	seen := map[string]bool{}
	for _, e := range emails {
		if !seen[e] {
			seen[e] = true
			if id, err := a.find(e); err != nil || id == "" {
				t.Fatalf("%s: %q %v", e, id, err)
			}
		}
	}
	if n != len(seen) {
		t.Fatalf("%d members for %d addresses", n, len(seen))
	}
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
