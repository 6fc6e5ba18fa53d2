package reseal

import (
	"context"
	"fmt"
	"testing"

	"github.com/wardlab/ward/field"
)

// TestIndexMerges: with case folding, "Alice@x" and "alice@x" share an
// index value (one group, two rows) whether plaintext or sealed, equal
// values merge nothing, and nothing is written.
func TestIndexMerges(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		table := d.table(t, "users")
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, email TEXT, email_idx %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		col := mustColumn(t, kr, table, "email", field.WithEncoding(field.Text))
		ct, _ := col.SealString(field.RowInt(4), "CAROL@x")
		for i, v := range []any{"Alice@x", "alice@x", "bob@x", ct, "carol@x", "dave@x", "dave@x", nil} {
			if _, err := d.db.Exec(d.q(`INSERT INTO `+table+` (id, email) VALUES (?, ?)`), i+1, v); err != nil {
				t.Fatal(err)
			}
		}
		idx, err := field.NewBlindIndex(kr, table, "email", field.WithNormalizer(field.NormalizeFold))
		if err != nil {
			t.Fatal(err)
		}
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", Index: idx, IndexColumn: "email_idx"}
		m, err := job.IndexMerges(ctx)
		if err != nil || m.Groups != 2 || m.Rows != 4 || m.Unreadable != 0 {
			t.Fatalf("merges: %+v %v", m, err)
		}
		var written int
		d.db.QueryRow(`SELECT COUNT(*) FROM ` + table + ` WHERE email_idx IS NOT NULL`).Scan(&written)
		if written != 0 {
			t.Fatalf("IndexMerges wrote %d index values", written)
		}
	})
}
