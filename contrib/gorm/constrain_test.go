package wardgorm_test

import (
	"strings"
	"testing"

	"gorm.io/gorm/clause"
)

// TestConstrainWithoutGuard: an application that forgot Guard, with the
// database constrained: each of the paths that bypass the serializer —
// Update, Updates(map), UpdateColumn, Create(map), an upsert assignment,
// a Table() update — fails with the database's refusal instead of storing
// plaintext, while struct writes still seal and read back; a second
// Constrain changes nothing.
func TestConstrainWithoutGuard(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db.Migrator().DropTable(&Note{})
			if err := db.AutoMigrate(&Note{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Migrator().DropTable(&Note{}) })
			for range 2 {
				if err := ser.Constrain(db, &Note{}); err != nil {
					t.Fatal(err)
				}
			}
			n := Note{ID: "n1", UserID: 1, Body: "milk", Email: "a@example.com"}
			if err := db.Create(&n).Error; err != nil {
				t.Fatalf("a struct create: %v", err)
			}
			for what, write := range map[string]func() error{
				"Update":       func() error { return db.Model(&n).Update("body", "plain").Error },
				"Updates(map)": func() error { return db.Model(&n).Updates(map[string]any{"body": "plain"}).Error },
				"UpdateColumn": func() error { return db.Model(&n).UpdateColumn("body", "plain").Error },
				"Create(map)": func() error {
					return db.Model(&Note{}).Create(map[string]any{"id": "n2", "user_id": 1, "body": "plain", "email": "x"}).Error
				},
				"upsert": func() error {
					return db.Clauses(clause.OnConflict{DoUpdates: clause.Assignments(map[string]any{"body": "plain"})}).Create(&Note{ID: "n1", UserID: 1, Body: "x", Email: "y"}).Error
				},
				"Table() update": func() error { return db.Table("notes").Where("id = ?", "n1").Update("email", "plain").Error },
			} {
				if err := write(); err == nil {
					t.Fatalf("%s stored plaintext", what)
				}
			}
			var raw struct{ Body, Email string }
			db.Raw("SELECT body, email FROM notes WHERE id = ?", "n1").Scan(&raw)
			if !strings.HasPrefix(raw.Body, "w4:") || !strings.HasPrefix(raw.Email, "w4:") {
				t.Fatalf("stored %q / %q", raw.Body, raw.Email)
			}
			var got Note
			if err := db.First(&got, "id = ?", "n1").Error; err != nil || got.Body != "milk" {
				t.Fatalf("read back %+v %v", got, err)
			}
			got.Body = "eggs"
			if err := db.Save(&got).Error; err != nil {
				t.Fatalf("a struct save: %v", err)
			}
		})
	}
}
