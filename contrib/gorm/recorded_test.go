package wardgorm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/wardlab/ward/contrib/internal/recordedtest"

	wardgorm "github.com/wardlab/ward/contrib/gorm"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/ledger"
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
			if err := db.AutoMigrate(&MemberV1{}); err != nil {
				t.Fatal(err)
			}
			if err := ser.Guard(db, &MemberV1{}); err != nil {
				t.Fatal(err)
			}
			seeded := recordedtest.Seeded(20)
			for i, e := range seeded {
				if err := db.Create(&MemberV1{ID: fmt.Sprintf("s%d", i), Email: e}).Error; err != nil {
					t.Fatal(err)
				}
			}
			if err := db.AutoMigrate(&Member{}); err != nil { // adds the spare column
				t.Fatal(err)
			}
			app := newRecordedApp(t, db)
			t.Logf("%d sign-ups during the re-keys", app.Run(t, seeded))
			// Each write path keeps the index: Save and a map update move
			// a member to another address.
			if err := db.Save(&Member{ID: "s0", Email: "Saved@Example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			app.MustFind(t, "saved@example.com", "s0")
			if err := db.Model(&Member{ID: "s1"}).Updates(map[string]any{"Email": "Updated@Example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			app.MustFind(t, "updated@example.com", "s1")
			app.MustFind(t, seeded[0], "")
			if err := db.Session(&gorm.Session{SkipDefaultTransaction: true}).Create(&Member{ID: "no-tx", Email: "notx@example.com"}).Error; !errors.Is(err, wardgorm.ErrNoTx) {
				t.Fatalf("a write outside a transaction: %v", err)
			}
		})
	}
}

// recordedApp is one GORM process with a recorded index.
type recordedApp struct {
	*recordedtest.App
	db *gorm.DB
}

func newRecordedApp(t *testing.T, db *gorm.DB) *recordedApp {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	dialect, err := field.ParseDialect(map[string]string{"sqlite": "sqlite", "postgres": "postgres", "mysql": "mysql"}[db.Dialector.Name()])
	if err != nil {
		t.Fatal(err)
	}
	a := &recordedApp{db: db}
	a.App = recordedtest.Join(t, sqlDB, dialect, kr, recordedtest.Adapter{
		Record: func(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions) error {
			ser.Record(db, lg, o)
			return ser.Guard(db, &Member{})
		},
		Watch: func(ctx context.Context, every time.Duration) { ser.Watch(ctx, every, nil) },
	})
	a.Find, a.SignUp, a.Refresh = a.find, a.signUp, ser.Refresh
	return a
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

// signUp creates a member by a struct or a map create, then moves one in
// five to another address by a map update or a Save; it returns the
// address the member ends with.
func (a *recordedApp) signUp(_ context.Context, c, i int) ([]string, error) {
	email, id := fmt.Sprintf("New%d@Example.com", i*2+c/2), fmt.Sprintf("c%d-%d", c, i)
	var err error
	if c%2 == 0 {
		err = a.db.Create(&Member{ID: id, Email: email}).Error
	} else {
		err = a.db.Model(&Member{}).Create(map[string]any{"ID": id, "Email": email}).Error
	}
	if err != nil || i%5 != 0 {
		return []string{email}, err
	}
	moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
	update := a.db.Model(&Member{ID: id}).Updates(map[string]any{"Email": moved})
	if c >= 2 {
		update = a.db.Save(&Member{ID: id, Email: moved})
	}
	if update.Error != nil {
		return []string{email}, nil
	}
	return []string{moved}, nil
}
