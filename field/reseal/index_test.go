package reseal

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/wardlab/ward/field"
)

// TestIndexBackfill: a job with an index column encrypts plaintext rows
// and writes each one's blind index in the same UPDATE, fills in the index
// of rows already encrypted without one, and leaves the census done.
func TestIndexBackfill(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		table := d.table(t, "users")
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, email TEXT, email_index %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		col := mustColumn(t, kr, table, "email", field.WithEncoding(field.Text), field.AcceptPlaintext())
		idx, err := field.NewBlindIndex(kr, table, "email", field.WithNormalizer(field.NormalizeFold))
		if err != nil {
			t.Fatal(err)
		}
		const n = 300
		for i := 1; i <= n; i++ {
			var v any = fmt.Sprintf("User%d@Example.com", i)
			if i%3 == 0 { // already encrypted by the application, index not yet
				ct, _ := col.SealString(field.RowInt(int64(i)), v.(string))
				v = ct
			}
			if i%50 == 0 {
				v = nil
			}
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, email) VALUES (?, ?)`, table)), i, v); err != nil {
				t.Fatal(err)
			}
		}
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 37, FromPlaintext: true, Workers: 2, Index: idx, IndexColumn: "email_index"}
		c, err := job.Count(ctx)
		if err != nil || c.IndexMissing == 0 || c.Done() {
			t.Fatalf("census before: %+v %v", c, err)
		}
		st, err := job.Run(ctx)
		if err != nil || st.Indexed == 0 || st.Plaintext == 0 {
			t.Fatalf("run: %+v %v", st, err)
		}
		rows, err := d.db.Query(fmt.Sprintf(`SELECT id, email, email_index FROM %s ORDER BY id`, table))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var ct field.Ciphertext
			var got []byte
			if err := rows.Scan(&id, &ct, &got); err != nil {
				t.Fatal(err)
			}
			if id%50 == 0 {
				if ct.Valid() || got != nil {
					t.Fatalf("row %d: NULL became %v / %x", id, ct.Valid(), got)
				}
				continue
			}
			pt, err := col.Open(field.RowInt(id), ct)
			if err != nil || string(pt) != fmt.Sprintf("User%d@Example.com", id) {
				t.Fatalf("row %d: %q %v", id, pt, err)
			}
			if want := idx.Compute(fmt.Sprintf("user%d@example.COM", id)); !bytes.Equal(got, want) {
				t.Fatalf("row %d: index %x, want %x", id, got, want)
			}
		}
		if c, err := job.Count(ctx); err != nil || !c.Done() || c.IndexMissing != 0 {
			t.Fatalf("census after: %+v %v", c, err)
		}
	})
}
