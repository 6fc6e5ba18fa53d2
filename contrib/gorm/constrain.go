package wardgorm

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/wardlab/ward/field"
)

// Constrain makes the database itself refuse a value in the models' ward
// columns that is not a ward ciphertext (field.Column.SealedConstraint: a
// CHECK constraint on PostgreSQL, triggers on SQLite and MySQL), after
// AutoMigrate.
// It covers what Guard cannot: an application that forgot to install
// Guard on a *gorm.DB, raw SQL, psql, another service. Such a write then
// fails with the database's error instead of storing plaintext. Run it
// once per database (it skips what exists); rows written before are not
// checked (PostgreSQL: NOT VALID).
func (s *Serializer) Constrain(db *gorm.DB, models ...any) error {
	var d field.Dialect
	switch name := db.Dialector.Name(); name {
	case "postgres":
		d = field.Postgres
	case "sqlite":
		d = field.SQLite
	case "mysql":
		d = field.MySQL
	default:
		return fmt.Errorf("wardgorm: Constrain supports PostgreSQL, SQLite and MySQL, not %s", name)
	}
	for _, m := range models {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(m); err != nil {
			return fmt.Errorf("wardgorm: parsing %T: %w", m, err)
		}
		for _, f := range stmt.Schema.Fields {
			if !isWard(f) {
				continue
			}
			if err := s.constrain(db, d, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// constrain adds one field's constraint unless it exists.
func (s *Serializer) constrain(db *gorm.DB, d field.Dialect, f *schema.Field) error {
	b, err := s.binding(f)
	if err != nil {
		return err
	}
	if d == field.Postgres {
		var n int64
		q := `SELECT count(*) FROM pg_constraint WHERE conname = ? AND conrelid = to_regclass(?)` // this table, as search_path finds it
		if err := db.Raw(q, b.col.ConstraintName(), quoted(f.Schema.Table)).Scan(&n).Error; err != nil {
			return fmt.Errorf("wardgorm: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
	stmts, err := b.col.SealedConstraint(d)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if err := db.Exec(q).Error; err != nil {
			return fmt.Errorf("wardgorm: constraining %s.%s: %w", f.Schema.Table, f.DBName, err)
		}
	}
	return nil
}

// quoted is a table name as to_regclass reads it.
func quoted(table string) string {
	q, err := field.QuoteIdent(table)
	if err != nil {
		return table
	}
	return q
}
