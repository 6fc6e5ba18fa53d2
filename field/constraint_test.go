package field_test

import (
	"fmt"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
)

// TestSealedConstraint: with the constraint, the database refuses
// plaintext and a too-short or foreign value in a binary and in a text
// column, on insert and update, and accepts ciphertexts and NULL; on
// PostgreSQL rows written before it stay (NOT VALID).
func TestSealedConstraint(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		dialect, _ := field.ParseDialect(d.Driver)
		kr, _ := keyring.New(keyring.AES256GCM)
		for _, text := range []bool{false, true} {
			table := d.Table(t, "notes")
			typ := d.Blob
			var opts []field.ColumnOption
			if text {
				typ, opts = "TEXT", []field.ColumnOption{field.WithEncoding(field.Text)}
			}
			if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s)`, table, typ)); err != nil {
				t.Fatal(err)
			}
			col, err := field.NewColumn(kr, table, "body", opts...)
			if err != nil {
				t.Fatal(err)
			}
			var plain any = []byte("written before")
			if text {
				plain = "written before"
			}
			ins := dialect.Rebind(`INSERT INTO ` + table + ` VALUES (?, ?)`)
			if _, err := d.DB.Exec(ins, 1, plain); err != nil {
				t.Fatal(err)
			}
			stmts, err := col.SealedConstraint(dialect)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stmts {
				if _, err := d.DB.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			ct, _ := col.Seal(field.RowInt(2), []byte("sealed"))
			v, _ := ct.Value()
			if _, err := d.DB.Exec(ins, 2, v); err != nil {
				t.Fatalf("text %v: a ciphertext refused: %v", text, err)
			}
			if _, err := d.DB.Exec(ins, 3, nil); err != nil {
				t.Fatalf("text %v: NULL refused: %v", text, err)
			}
			var short, foreign any = []byte{3, 1, 2}, []byte("w3:not binary, or the wrong type")
			if text {
				short, foreign = "plain text", []byte{3, 1, 2}
			}
			// A row still holding plaintext (a migration that has not
			// reached it) can have its other columns updated, where the
			// guard is triggers (SQLite, MySQL); PostgreSQL's CHECK
			// re-checks the row and refuses.
			_, err = d.DB.Exec(dialect.Rebind(`UPDATE ` + table + ` SET id = 100 WHERE id = 1`))
			if (err == nil) != (dialect != field.Postgres) {
				t.Fatalf("text %v: another column of a plaintext row updated: %v", text, err)
			}
			for i, bad := range []any{plain, short, foreign} {
				if _, err := d.DB.Exec(ins, 10+i, bad); err == nil {
					t.Fatalf("text %v: insert of %q accepted", text, bad)
				}
				if _, err := d.DB.Exec(dialect.Rebind(`UPDATE `+table+` SET body = ? WHERE id = 2`), bad); err == nil {
					t.Fatalf("text %v: update to %q accepted", text, bad)
				}
			}
		}
	})
}
