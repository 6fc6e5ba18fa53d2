package wardgorm_test

import (
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"

	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	wardgorm "github.com/wardlab/ward/contrib/gorm"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// Note binds its body to its client-assigned ID and its owner.
type Note struct {
	ID         string `gorm:"primaryKey"`
	UserID     int64
	Body       string  `gorm:"serializer:ward" ward:"bind:UserID"`
	Title      *string `gorm:"serializer:ward"`
	Email      string  `gorm:"serializer:ward"`
	EmailIndex []byte  `gorm:"serializer:ward-index;type:bytes;index" ward:"of:Email"`
}

// Counter has a database-assigned key: its value is bound to table and
// column only, which the tag says explicitly.
type Counter struct {
	ID    uint   `gorm:"primaryKey;autoIncrement"`
	Label string `gorm:"serializer:ward" ward:"key:-"`
}

var (
	ser *wardgorm.Serializer
	kr  *keyring.Keyring // file-backed: a ledger anchors its databases in the file
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wardgorm")
	if err != nil {
		panic(err)
	}
	kr, err = keyring.Create(context.Background(), filepath.Join(dir, "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		panic(err)
	}
	ser = wardgorm.Register(kr)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func databases(t *testing.T) map[string]*gorm.DB {
	cfg := func() *gorm.Config { return &gorm.Config{Logger: logger.Discard} } // one each: GORM caches schemas in it
	out := map[string]*gorm.DB{}
	// Writers queue for the write lock (immediate transactions, a busy
	// timeout), as a recorded blind index's writes expect on SQLite.
	sq, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "app.db")+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"), cfg())
	if err != nil {
		t.Fatal(err)
	}
	out["sqlite"] = sq
	if url := pgtest.URL(t); url != "" {
		pg, err := gorm.Open(postgres.Open(url), cfg())
		if err != nil {
			t.Fatal(err)
		}
		out["postgres"] = pg
	} else {
		t.Log("WARD_TEST_POSTGRES_URL is not set: PostgreSQL skipped")
	}
	if url := mytest.URL(t); url != "" {
		my, err := gorm.Open(mysql.Open(mytest.DSN(t, url)), cfg())
		if err != nil {
			t.Fatal(err)
		}
		out["mysql"] = my
	} else {
		t.Log("WARD_TEST_MYSQL_URL is not set: MariaDB skipped")
	}
	return out
}

func TestGORM(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db.Migrator().DropTable(&Note{}, &Counter{})
			if err := db.AutoMigrate(&Note{}, &Counter{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Migrator().DropTable(&Note{}, &Counter{}) })
			title := "groceries"
			notes := []Note{{ID: "n1", UserID: 1, Body: "milk, eggs", Title: &title, Email: "Alice@Example.com"},
				{ID: "n2", UserID: 2, Body: "", Email: "bob@example.com"}}
			if err := db.Create(&notes).Error; err != nil {
				t.Fatal(err)
			}
			// What the database holds: ciphertexts, and NULL for a nil title.
			var raw struct {
				Body  string
				Title *string
			}
			db.Raw("SELECT body, title FROM notes WHERE id = ?", "n2").Scan(&raw)
			if raw.Title != nil || len(raw.Body) < 40 || raw.Body[:3] != "w4:" {
				t.Fatalf("stored: %+v", raw)
			}
			var got Note
			if err := db.First(&got, "id = ?", "n1").Error; err != nil {
				t.Fatal(err)
			}
			if got.Body != "milk, eggs" || got.Title == nil || *got.Title != "groceries" || got.Email != "Alice@Example.com" {
				t.Fatalf("read back: %+v", got)
			}
			idx, _ := ser.Index("notes", "email", "alice@example.COM")
			var found Note
			if err := db.Where("email_index = ?", idx).First(&found).Error; err != nil || found.ID != "n1" {
				t.Fatalf("blind index: %+v %v", found, err)
			}
			// A database writer moves n1's note to user 2: it fails to open.
			db.Exec("UPDATE notes SET user_id = 2 WHERE id = ?", "n1")
			err := db.First(&Note{}, "id = ?", "n1").Error
			if !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("re-pointed owner: %v", err)
			}
			var oe *field.OpenError
			if !errors.As(err, &oe) || oe.Column != "body" {
				t.Fatalf("error names no column: %v", err)
			}
			// A value copied to another row fails too.
			db.Exec("UPDATE notes SET user_id = 1 WHERE id = ?", "n1")
			db.Exec("UPDATE notes SET email = (SELECT email FROM notes WHERE id = 'n1') WHERE id = 'n2'")
			if err := db.First(&Note{}, "id = ?", "n2").Error; !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("copied value: %v", err)
			}
			// A missing client key is refused before anything is written.
			if err := db.Create(&Note{UserID: 1, Body: "x"}).Error; !errors.Is(err, wardgorm.ErrNoRowKey) {
				t.Fatalf("no key: %v", err)
			}
			// key:- binds to table and column only: works with auto IDs.
			c := Counter{Label: "visits"}
			if err := db.Create(&c).Error; err != nil {
				t.Fatal(err)
			}
			var back Counter
			if err := db.First(&back, c.ID).Error; err != nil || back.Label != "visits" {
				t.Fatalf("counter %d: %+v %v", c.ID, back, err)
			}
			// Tampering is detected.
			db.Exec("UPDATE counters SET label = ? WHERE id = ?", tamper(t, db, c.ID), c.ID)
			if err := db.First(&Counter{}, c.ID).Error; !errors.Is(err, keyring.ErrAuthentication) {
				t.Fatalf("tampered: %v", err)
			}
		})
	}
}

func tamper(t *testing.T, db *gorm.DB, id uint) string {
	var s string
	db.Raw("SELECT label FROM counters WHERE id = ?", id).Scan(&s)
	var ct field.Ciphertext
	if err := ct.Scan(s); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), ct.Bytes()...)
	b[len(b)-1] ^= 1
	return keyring.EncodeText(b)
}

// TestGORMMixed: during a migration from plaintext (AcceptPlaintext),
// rows written before encryption read as plaintext and new ones are
// encrypted.
func TestGORMMixed(t *testing.T) {
	mixed, _ := keyring.New(keyring.AES256GCM)
	wardgorm.Register(mixed, wardgorm.WithColumnOptions(field.AcceptPlaintext()))
	defer func() { ser = wardgorm.Register(kr) }() // the package's keyring back
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db.Migrator().DropTable(&Counter{})
			db.AutoMigrate(&Counter{})
			t.Cleanup(func() { db.Migrator().DropTable(&Counter{}) })
			db.Exec("INSERT INTO counters (id, label) VALUES (1, 'written before ward')")
			if err := db.Create(&Counter{ID: 2, Label: "written by ward"}).Error; err != nil {
				t.Fatal(err)
			}
			var got []Counter
			if err := db.Order("id").Find(&got).Error; err != nil || len(got) != 2 || got[0].Label != "written before ward" || got[1].Label != "written by ward" {
				t.Fatalf("%+v %v", got, err)
			}
			var stored string
			db.Raw("SELECT label FROM counters WHERE id = 2").Scan(&stored)
			if stored[:3] != "w4:" {
				t.Fatalf("new row stored as %q", stored)
			}
		})
	}
}
