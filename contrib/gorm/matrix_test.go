package wardgorm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	wardgorm "github.com/wardlab/ward/contrib/gorm"
)

// TestWriteMatrix is the adopters issue's write-API matrix for GORM: every
// documented way to write a row either seals each ward value for its row
// (and updates the blind index in the same statement), or is refused
// before anything is written. Raw SQL is not intercepted (the last cell).
// On SQLite and PostgreSQL.
func TestWriteMatrix(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db.Migrator().DropTable(&Note{}, &Counter{})
			if err := db.AutoMigrate(&Note{}, &Counter{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Migrator().DropTable(&Note{}, &Counter{}) })
			if err := ser.Guard(db, &Note{}, &Counter{}); err != nil {
				t.Fatal(err)
			}
			stored := func(id string) (body, email string) {
				t.Helper()
				var raw struct{ Body, Email string }
				db.Raw("SELECT body, email FROM notes WHERE id = ?", id).Scan(&raw)
				return raw.Body, raw.Email
			}
			read := func(id string) Note {
				t.Helper()
				var n Note
				if err := db.First(&n, "id = ?", id).Error; err != nil {
					t.Fatalf("reading %s: %v", id, err)
				}
				return n
			}
			sealed := func(id string) {
				t.Helper()
				b, e := stored(id)
				if !strings.HasPrefix(b, "w4:") || !strings.HasPrefix(e, "w4:") {
					t.Fatalf("%s stored %q / %q", id, b, e)
				}
			}
			findByEmail := func(email string) string {
				t.Helper()
				idx, _ := ser.Index("notes", "email", email)
				var n Note
				if err := db.Where("email_index = ?", idx).First(&n).Error; err != nil {
					return ""
				}
				return n.ID
			}
			refused := func(cell string, err error, id, wantBody string) {
				t.Helper()
				if !errors.Is(err, wardgorm.ErrUnsealable) {
					t.Fatalf("%s: %v, want ErrUnsealable", cell, err)
				}
				if id != "" {
					if got := read(id).Body; got != wantBody {
						t.Fatalf("%s wrote: body %q", cell, got)
					}
				}
			}

			// Create: struct, slice, map, slice of maps, in batches.
			if err := db.Create(&Note{ID: "s1", UserID: 1, Body: "struct", Email: "s1@example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Create(&[]Note{{ID: "s2", UserID: 1, Body: "slice", Email: "s2@example.com"}}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Model(&Note{}).Create(map[string]any{"ID": "m1", "UserID": 1, "Body": "map", "Email": "m1@example.com"}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Model(&Note{}).Create([]map[string]any{{"id": "m2", "user_id": 2, "body": "maps", "email": "m2@example.com"}}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.CreateInBatches([]Note{{ID: "b1", UserID: 1, Body: "batch", Email: "b1@example.com"}, {ID: "b2", UserID: 1, Body: "batch", Email: "b2@example.com"}}, 1).Error; err != nil {
				t.Fatal(err)
			}
			for id, body := range map[string]string{"s1": "struct", "s2": "slice", "m1": "map", "m2": "maps", "b1": "batch"} {
				sealed(id)
				if got := read(id); got.Body != body {
					t.Fatalf("%s reads %q", id, got.Body)
				}
			}
			if findByEmail("M1@example.com") != "m1" || findByEmail("m2@example.com") != "m2" {
				t.Fatal("blind index of a map create")
			}
			// Equality search reads like GORM.
			var eq Note
			if err := ser.Eq(db, &Note{}, "Email", "S1@Example.com").First(&eq).Error; err != nil || eq.ID != "s1" {
				t.Fatalf("Eq: %+v %v", eq, err)
			}
			if err := ser.Eq(db, &Note{}, "Body", "x").First(&eq).Error; err == nil || !strings.Contains(err.Error(), "no blind index") {
				t.Fatalf("Eq on a field without an index: %v", err)
			}
			if err := db.Model(&Note{}).Create(map[string]any{"UserID": 1, "Body": "no key"}).Error; !errors.Is(err, wardgorm.ErrNoRowKey) {
				t.Fatalf("map create without the row key: %v", err)
			}

			// Save, Update, Updates (map, struct), UpdateColumn(s).
			n := read("s1")
			n.Body = "saved"
			if err := db.Save(&n).Error; err != nil || read("s1").Body != "saved" {
				t.Fatalf("save: %v", err)
			}
			if err := db.Model(&n).Update("body", "updated").Error; err != nil || read("s1").Body != "updated" || n.Body != "updated" {
				t.Fatalf("update: %v, model holds %q", err, n.Body)
			}
			sealed("s1")
			if err := db.Model(&n).Update("email", "renamed@example.com").Error; err != nil {
				t.Fatal(err)
			}
			if findByEmail("renamed@example.com") != "s1" || findByEmail("s1@example.com") != "" {
				t.Fatal("update of an indexed field left the blind index stale")
			}
			if err := db.Model(&n).Updates(map[string]any{"body": "updates map", "Title": "a title"}).Error; err != nil {
				t.Fatal(err)
			}
			if got := read("s1"); got.Body != "updates map" || got.Title == nil || *got.Title != "a title" {
				t.Fatalf("updates map: %+v", got)
			}
			// A quoted or table-qualified key that the database reads as
			// the column is sealed all the same (on PostgreSQL a quoted
			// key stored plaintext); one it cannot read fails, and nothing
			// is written.
			for _, k := range []string{`"body"`, "`body`", "notes.body", `"notes"."body"`} {
				before := read("s1").Body
				err := db.Model(&n).Updates(map[string]any{k: "key " + k}).Error
				if got := read("s1"); err != nil && got.Body != before || err == nil && got.Body != "key "+k {
					t.Fatalf("updates map with key %s: %v, %+v", k, err, got)
				}
				sealed("s1")
			}
			if err := db.Model(&n).Updates(Note{Body: "updates struct", Email: "struct@example.com"}).Error; err != nil {
				t.Fatalf("updates struct: %v", err)
			}
			if got := read("s1"); got.Body != "updates struct" || findByEmail("struct@example.com") != "s1" {
				t.Fatalf("updates struct: %+v", got)
			}
			if err := db.Model(&n).UpdateColumn("body", "update column").Error; err != nil || read("s1").Body != "update column" {
				t.Fatalf("update column: %v", err)
			}
			if err := db.Model(&n).UpdateColumns(map[string]any{"body": "update columns"}).Error; err != nil || read("s1").Body != "update columns" {
				t.Fatalf("update columns: %v", err)
			}
			sealed("s1")

			// Upsert: the inserted row's sealed value, or refused.
			up := Note{ID: "s2", UserID: 1, Body: "upserted", Email: "s2@example.com"}
			if err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"body"})}).Create(&up).Error; err != nil || read("s2").Body != "upserted" {
				t.Fatalf("upsert: %v", err)
			}
			err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.Assignments(map[string]any{"body": "plain"})}).Create(&Note{ID: "s2", UserID: 1, Body: "x", Email: "s2@example.com"}).Error
			refused("upsert assigning a value", err, "s2", "upserted")

			// Bulk updates, Table(), expressions: refused, nothing written.
			refused("bulk update", db.Model(&Note{}).Where("user_id = ?", 1).Update("body", "bulk").Error, "s2", "upserted")
			refused("bulk updates", db.Model(&Note{}).Where("user_id = ?", 1).Updates(map[string]any{"email": "bulk@example.com"}).Error, "", "")
			refused("Table updates", db.Table("notes").Where("id = ?", "s2").Updates(map[string]any{"body": "table"}).Error, "s2", "upserted")
			refused("Table create", db.Table("notes").Create(map[string]any{"id": "t1", "user_id": 1, "body": "table"}).Error, "", "")
			refused("expression", db.Model(&n).Update("body", gorm.Expr("'expr'")).Error, "s1", "update columns")

			// An owner change re-seals what is bound to it (one row), or is
			// refused naming the bound columns (bulk).
			if err := db.Model(&n).Update("user_id", 7).Error; err != nil {
				t.Fatalf("owner change: %v", err)
			}
			if got := read("s1"); got.UserID != 7 || got.Body != "update columns" {
				t.Fatalf("after the owner change: %+v", got)
			}
			err = db.Model(&Note{}).Where("id = ?", "s2").Update("user_id", 8).Error
			if refused("bulk owner change", err, "s2", "upserted"); !strings.Contains(err.Error(), "user_id") {
				t.Fatalf("bulk owner change names no column: %v", err)
			}

			// Raw SQL is not intercepted: the plaintext is refused on read.
			db.Exec("UPDATE notes SET body = ? WHERE id = ?", "raw plaintext", "b2")
			if err := db.First(&Note{}, "id = ?", "b2").Error; err == nil || !strings.Contains(err.Error(), "not a ward ciphertext") {
				t.Fatalf("raw plaintext read back: %v", err)
			}

			// No other cell left plaintext in a ward column.
			var rows []struct {
				ID, Body, Email string
				Title           *string
			}
			db.Raw("SELECT id, body, email, title FROM notes WHERE id <> 'b2'").Scan(&rows)
			for _, r := range rows {
				for _, v := range []string{r.Body, r.Email} {
					if !strings.HasPrefix(v, "w4:") {
						t.Fatalf("%s holds %q", r.ID, v)
					}
				}
				if r.Title != nil && !strings.HasPrefix(*r.Title, "w4:") {
					t.Fatalf("%s title %q", r.ID, *r.Title)
				}
			}
		})
	}
}

// Account has a database-assigned key (bigserial, AUTOINCREMENT) that its
// ward field is bound to: the guard inserts the row, then seals the value
// for the key the database assigned, in the same transaction.
type Account struct {
	ID    int64  `gorm:"primaryKey;autoIncrement"`
	Email string `gorm:"serializer:ward"` // nullable: written once the key is known
	Index []byte `gorm:"serializer:ward-index;type:bytes;uniqueIndex" ward:"of:Email"`
}

func TestAssignedKeys(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db.Migrator().DropTable(&Account{})
			if err := db.AutoMigrate(&Account{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Migrator().DropTable(&Account{}) })
			if err := ser.Guard(db, &Account{}); err != nil {
				t.Fatal(err)
			}
			sent := &statements{}
			db = db.Session(&gorm.Session{Logger: sent})
			one := Account{Email: "one@example.com"}
			if err := db.Create(&one).Error; err != nil || one.ID == 0 {
				t.Fatalf("create: %+v %v", one, err)
			}
			many := []Account{{Email: "two@example.com"}, {Email: "three@example.com"}, {Email: "four@example.com"}}
			if err := db.CreateInBatches(&many, 2).Error; err != nil {
				t.Fatal(err)
			}
			for _, a := range append(many, one) {
				var got Account
				if err := db.First(&got, a.ID).Error; err != nil || got.Email != a.Email {
					t.Fatalf("account %d: %+v %v", a.ID, got, err)
				}
				var raw string
				db.Raw("SELECT email FROM accounts WHERE id = ?", a.ID).Scan(&raw)
				if !strings.HasPrefix(raw, "w4:") {
					t.Fatalf("account %d stored %q", a.ID, raw)
				}
			}
			// Bound to its row: a value copied to another account fails.
			db.Exec("UPDATE accounts SET email = (SELECT email FROM accounts WHERE id = ?) WHERE id = ?", one.ID, many[0].ID)
			if err := db.First(&Account{}, many[0].ID).Error; err == nil {
				t.Fatal("a value copied to another row opened")
			}
			// Uniqueness through the index: a second sign-up is refused,
			// and nothing of it stays.
			if err := db.Create(&Account{Email: "ONE@example.com"}).Error; err == nil {
				t.Fatal("a duplicate address was accepted")
			}
			var n int64
			db.Model(&Account{}).Count(&n)
			if n != 4 {
				t.Fatalf("%d accounts", n)
			}
			if err := ser.Eq(db, &Account{}, "Email", "three@example.com").First(&Account{}).Error; err != nil {
				t.Fatalf("Eq: %v", err)
			}
			// No statement carried a plaintext address, not even the
			// inserts inside their transactions.
			sent.mu.Lock()
			defer sent.mu.Unlock()
			if len(sent.all) < 5 || !strings.Contains(strings.Join(sent.all, "\n"), "INSERT INTO") {
				t.Fatalf("the logger saw %d statements", len(sent.all))
			}
			for _, q := range sent.all {
				if strings.Contains(q, "@example.com") {
					t.Fatalf("a statement carried a plaintext address: %s", q)
				}
			}
		})
	}
}

// statements is a GORM logger that records every statement, with its
// arguments written in.
type statements struct {
	mu  sync.Mutex
	all []string
}

func (s *statements) LogMode(logger.LogLevel) logger.Interface { return s }
func (s *statements) Info(context.Context, string, ...any)     {}
func (s *statements) Warn(context.Context, string, ...any)     {}
func (s *statements) Error(context.Context, string, ...any)    {}
func (s *statements) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, q)
}
