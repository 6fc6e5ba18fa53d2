package lifecycle_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lifecycle"
)

// BenchmarkSweep: what a retire's sweep of one unrecorded column costs,
// per row, on a SQLite file of 100,000 sealed 500-byte values in the text
// form (GOTOOLCHAIN=go1.27.3 go test ./lifecycle -run '^$' -bench Sweep).
func BenchmarkSweep(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", dburl.SQLiteDSN(filepath.Join(b.TempDir(), "sweep.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	kr, _ := keyring.New(keyring.AES256GCM)
	col, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text))
	const rows = 100_000
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		b.Fatal(err)
	}
	tx, _ := db.Begin()
	pt := make([]byte, 500)
	for i := range rows {
		ct, _ := col.Seal(field.RowInt(int64(i)), pt)
		if _, err := tx.Exec(`INSERT INTO notes VALUES (?, ?)`, i, ct.AsText()); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	d := lifecycle.Database{Name: "bench", DB: db, Dialect: field.SQLite}
	b.ResetTimer()
	for b.Loop() {
		found, err := lifecycle.Sweep(ctx, d, nil, kr.Primary().ID)
		if err != nil || len(found) != 1 || found[0].Values != rows {
			b.Fatal(fmt.Sprint(found), err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
