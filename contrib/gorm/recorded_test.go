package wardgorm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	wardgorm "github.com/wardlab/ward/contrib/gorm"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/forms"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// Member has a recorded blind index: two index columns, the second the
// spare a re-key fills.
type Member struct {
	ID          string `gorm:"primaryKey;size:64"`
	Email       string `gorm:"serializer:ward" ward:"key:ID"`
	EmailIndex  []byte `gorm:"serializer:ward-index;type:bytes;size:64;uniqueIndex" ward:"of:Email"`
	EmailIndex2 []byte `gorm:"serializer:ward-index;type:bytes;size:64;uniqueIndex" ward:"of:Email;spare"`
}

// MemberV1 is the same table as an application wrote it before: a v1
// index (keyed by the keyring's root), no spare column.
type MemberV1 struct {
	ID         string `gorm:"primaryKey;size:64"`
	Email      string `gorm:"serializer:ward" ward:"key:ID"`
	EmailIndex []byte `gorm:"serializer:ward-index;type:bytes;size:64;uniqueIndex" ward:"of:Email"`
}

func (MemberV1) TableName() string { return "members" }

// TestRecordedIndex: a GORM application's v1 index is recorded as such
// (FromV1), moved to v2 by a re-key and, after a rotation, to the next
// epoch, while clients sign up (struct and map creates, map updates) and
// log in through Eq: every log-in finds its member throughout, no address
// gets two members, and after each re-key every value is in the current
// column under the current epoch and the other column is empty. A write
// outside a transaction is refused.
func TestRecordedIndex(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := db.AutoMigrate(&MemberV1{}); err != nil {
				t.Fatal(err)
			}
			if err := ser.Guard(db, &MemberV1{}); err != nil {
				t.Fatal(err)
			}
			var seeded []string
			for i := range 20 {
				seeded = append(seeded, fmt.Sprintf("Seed%d@Example.com", i))
				if err := db.Create(&MemberV1{ID: fmt.Sprintf("s%d", i), Email: seeded[i]}).Error; err != nil {
					t.Fatal(err)
				}
			}
			if err := db.AutoMigrate(&Member{}); err != nil { // adds the spare column
				t.Fatal(err)
			}
			app := newRecordedApp(t, db)
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
			e0 := app.rekey(t, 0)
			if _, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{app.d}, lifecycle.RotateOptions{Wait: time.Minute, Fleet: app.opts.Fleet}); err != nil {
				t.Fatal(err)
			}
			app.rekey(t, e0)
			close(stop)
			signed := wait()
			if len(signed) == 0 {
				t.Fatal("no sign-up succeeded during the re-keys")
			}
			t.Logf("%d sign-ups during the re-keys", len(signed))
			if n := missed.Load(); n > 0 {
				t.Fatalf("%d log-ins found nobody or someone else during the re-keys", n)
			}
			app.check(t, append(seeded, signed...))
			// Each write path keeps the index: Save and a map update move
			// a member to another address.
			if err := db.Save(&Member{ID: "s0", Email: "Saved@Example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			app.mustFind(t, "saved@example.com", "s0")
			if err := db.Model(&Member{ID: "s1"}).Updates(map[string]any{"Email": "Updated@Example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			app.mustFind(t, "updated@example.com", "s1")
			app.mustFind(t, seeded[0], "")
			if err := db.Session(&gorm.Session{SkipDefaultTransaction: true}).Create(&Member{ID: "no-tx", Email: "notx@example.com"}).Error; !errors.Is(err, wardgorm.ErrNoTx) {
				t.Fatalf("a write outside a transaction: %v", err)
			}
		})
	}
}

// recordedApp is one GORM process with a recorded index, registered in
// its fleet.
type recordedApp struct {
	db   *gorm.DB
	d    lifecycle.Database
	opts lifecycle.IndexRekeyOptions
}

func newRecordedApp(t *testing.T, db *gorm.DB) *recordedApp {
	t.Helper()
	ctx := context.Background()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	dialect, err := field.ParseDialect(map[string]string{"sqlite": "sqlite", "postgres": "postgres", "mysql": "mysql"}[db.Dialector.Name()])
	if err != nil {
		t.Fatal(err)
	}
	lg := &ledger.Ledger{DB: sqlDB, Dialect: dialect}
	// The package's keyring serves one database per subtest: each after
	// the first is adopted, as an operator adopts a new database.
	if _, err := lg.Adopt(ctx, kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
		t.Fatal(err)
	}
	gate := forms.New()
	ser.Record(db, lg, ledger.IndexerOptions{Gate: gate, FromV1: true})
	if err := ser.Guard(db, &Member{}); err != nil {
		t.Fatal(err)
	}
	reg := &fleet.Registry{DB: sqlDB, Dialect: dialect, Ledger: lg, Gate: gate}
	m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go ser.Watch(wctx, 20*time.Millisecond, nil)
	t.Cleanup(func() { cancel(); m.Leave(context.Background()) })
	return &recordedApp{db: db, d: lifecycle.Database{Name: db.Dialector.Name(), DB: sqlDB, Dialect: dialect, Ledger: lg},
		opts: lifecycle.IndexRekeyOptions{Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}, Wait: time.Minute}}
}

// find returns the ID of the member with address email ("" for none; a
// member with another address is "found <address>").
func (a *recordedApp) find(email string) (string, error) {
	var m Member
	err := ser.Eq(a.db, &Member{}, "Email", email).First(&m).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", nil
	case err != nil:
		return "", err
	case field.NormalizeFold(m.Email) != field.NormalizeFold(email):
		return "found " + m.Email, nil
	}
	return m.ID, nil
}

func (a *recordedApp) mustFind(t *testing.T, email, id string) {
	t.Helper()
	if got, err := a.find(email); err != nil || got != id {
		t.Fatalf("%s: found %q, %v; want %s", email, got, err, id)
	}
}

// traffic signs up new members (each address tried by two clients at
// once, by struct and map creates, then one in five moved by a map update
// or a Save) and
// logs the seeded ones in until stop closes; wait returns the addresses
// signed up.
func (a *recordedApp) traffic(t *testing.T, seeded []string, stop chan struct{}) (missed *atomic.Int64, wait func() []string) {
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
				e := seeded[(i*7+c)%len(seeded)]
				if id, err := a.find(e); err == nil && id != fmt.Sprintf("s%d", (i*7+c)%len(seeded)) {
					missed.Add(1)
					t.Errorf("log-in of %s found %q", e, id)
				}
				email, id := fmt.Sprintf("New%d@Example.com", i*2+c/2), fmt.Sprintf("c%d-%d", c, i)
				var err error
				if c%2 == 0 {
					err = a.db.Create(&Member{ID: id, Email: email}).Error
				} else {
					err = a.db.Model(&Member{}).Create(map[string]any{"ID": id, "Email": email}).Error
				}
				if err == nil && i%5 == 0 {
					moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
					update := a.db.Model(&Member{ID: id}).Updates(map[string]any{"Email": moved})
					if c >= 2 {
						update = a.db.Save(&Member{ID: id, Email: moved})
					}
					if update.Error == nil {
						email = moved
					}
				}
				if err == nil {
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
func (a *recordedApp) rekey(t *testing.T, from keyring.KeyID) keyring.KeyID {
	t.Helper()
	res, err := lifecycle.RekeyIndex(context.Background(), kr, a.d, "members", "email", "", a.opts)
	if err != nil || res.From != from || res.To != kr.Primary().ID || res.Index.Rekey != nil {
		t.Fatalf("re-key from %v: %+v %v", from, res, err)
	}
	return res.To
}

// check: every address signed up has one member, found by Eq; every
// stored index is v2 under the current epoch in the current column.
func (a *recordedApp) check(t *testing.T, emails []string) {
	t.Helper()
	if _, err := lifecycle.RekeyIndex(context.Background(), kr, a.d, "members", "email", "", a.opts); err != nil {
		t.Fatal(err) // clears a write in flight across the switch
	}
	if err := ser.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := a.d.Ledger.Verified(context.Background(), kr)
	if err != nil || len(st.Indexes) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	cur, other := st.Indexes[0].Columns()
	var rows []map[string]any
	if err := a.db.Table("members").Select("id", cur+" AS cur", other+" AS other").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		v, _ := r["cur"].([]byte)
		if epoch, err := field.IndexEpoch(v); err != nil || epoch != kr.Primary().ID || r["other"] != nil {
			t.Fatalf("member %v: index %x (epoch %v, %v), other column %v", r["id"], v, epoch, err, r["other"])
		}
	}
	seen := map[string]bool{}
	for _, e := range emails {
		if seen[e] {
			continue
		}
		seen[e] = true
		id, err := a.find(e)
		if err != nil || id == "" {
			t.Fatalf("%s: %q %v", e, id, err)
		}
	}
	if len(rows) != len(seen) {
		t.Fatalf("%d members for %d addresses", len(rows), len(seen))
	}
}
