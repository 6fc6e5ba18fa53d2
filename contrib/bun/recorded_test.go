package wardbun_test

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

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	wardbun "github.com/wardlab/ward/contrib/bun"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/forms"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
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
// move addresses (NewUpdate) and log in through Eq: every log-in finds
// its member throughout, no address gets two members, and after each
// re-key every value is in the current column under the current epoch
// and the other column is empty. A write outside a transaction is refused.
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
			var seeded []string
			for i := range 20 {
				seeded = append(seeded, fmt.Sprintf("Seed%d@Example.com", i))
				if _, err := db.NewInsert().Model(&MemberV1{ID: fmt.Sprintf("s%d", i), Email: wardbun.NewText(seeded[i])}).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			app := newBunApp(t, db, kr)
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
			if _, err := db.NewInsert().Model(&Member{ID: "no-tx", Email: wardbun.NewText("notx@example.com")}).Exec(ctx); !errors.Is(err, wardbun.ErrNoTx) {
				t.Fatalf("a write outside a transaction: %v", err)
			}
		})
	}
}

// bunApp is one bun process with a recorded index, registered in its
// fleet.
type bunApp struct {
	db    *bun.DB
	kr    *keyring.Keyring
	d     lifecycle.Database
	opts  lifecycle.IndexRekeyOptions
	epoch keyring.KeyID // the index's, after the last re-key
}

func newBunApp(t *testing.T, db *bun.DB, kr *keyring.Keyring) *bunApp {
	t.Helper()
	ctx := context.Background()
	name := db.Dialect().Name().String()
	if name == "pg" {
		name = "postgres"
	}
	dialect, err := field.ParseDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	lg := &ledger.Ledger{DB: db.DB, Dialect: dialect}
	// One keyring serves a database per subtest: each is adopted, as an
	// operator adopts a new database.
	if _, err := lg.Adopt(ctx, kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
		t.Fatal(err)
	}
	gate := forms.New()
	if err := codec.Record(ctx, lg, ledger.IndexerOptions{Gate: gate, FromV1: true}, (*Member)(nil)); err != nil {
		t.Fatal(err)
	}
	reg := &fleet.Registry{DB: db.DB, Dialect: dialect, Ledger: lg, Gate: gate}
	m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go codec.Watch(wctx, 20*time.Millisecond, nil)
	t.Cleanup(func() { cancel(); m.Leave(context.Background()) })
	return &bunApp{db: db, kr: kr, d: lifecycle.Database{Name: dialect.String(), DB: db.DB, Dialect: dialect, Ledger: lg},
		opts: lifecycle.IndexRekeyOptions{Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}, Wait: time.Minute}}
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

func (a *bunApp) mustFind(t *testing.T, email, id string) {
	t.Helper()
	if got, err := a.find(email); err != nil || got != id {
		t.Fatalf("%s: found %q, %v; want %s", email, got, err, id)
	}
}

// signUp creates a member (NewInsert in a transaction, or Codec.Insert)
// and moves one in five to another address (NewUpdate); it returns the
// address the member ends with.
func (a *bunApp) signUp(ctx context.Context, c, i int) (string, error) {
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
		return email, err
	}
	moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
	m.Email = wardbun.NewText(moved)
	if err := a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model(m).Column("email", "email_index", "email_index2").WherePK().Exec(wardbun.InTx(ctx, tx))
		return err
	}); err != nil {
		return email, nil
	}
	return moved, nil
}

// traffic signs up new members (each address tried by two clients at
// once) and logs the seeded ones in until stop closes; wait returns the
// addresses signed up.
func (a *bunApp) traffic(t *testing.T, seeded []string, stop chan struct{}) (missed *atomic.Int64, wait func() []string) {
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
				if email, err := a.signUp(context.Background(), c, i); err == nil {
					mu.Lock()
					signed = append(signed, email)
					mu.Unlock()
				}
			}
		})
	}
	return missed, func() []string { wg.Wait(); return signed }
}

// rekey re-keys the index away from epoch from and checks the result.
func (a *bunApp) rekey(t *testing.T, from keyring.KeyID) {
	t.Helper()
	res, err := lifecycle.RekeyIndex(context.Background(), a.kr, a.d, "bun_members", "email", "", a.opts)
	if err != nil || res.From != from || res.To != a.kr.Primary().ID || res.Index.Rekey != nil {
		t.Fatalf("re-key from %v: %+v %v", from, res, err)
	}
	a.epoch = res.To
}

// check: every address signed up has one member, found by Eq; every
// stored index is v2 under the current epoch in the current column.
func (a *bunApp) check(t *testing.T, emails []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := lifecycle.RekeyIndex(ctx, a.kr, a.d, "bun_members", "email", "", a.opts); err != nil {
		t.Fatal(err) // clears a write in flight across the switch
	}
	if err := codec.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.d.Ledger.Verified(ctx, a.kr)
	if err != nil || len(st.Indexes) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	cur, other := st.Indexes[0].Columns()
	rows, err := a.db.QueryContext(ctx, fmt.Sprintf("SELECT id, %s, %s FROM bun_members", cur, other))
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
