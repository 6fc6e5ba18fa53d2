package subject

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
)

// BenchmarkSeal500 compares sealing 500 B under a keyring key and under a
// cached subject key, through the field layer with a reused buffer (the
// lab's "subject" scenario interleaves the same comparison).
func BenchmarkSeal500(b *testing.B) {
	ctx := context.Background()
	db, d := benchDB(b)
	kr, _ := keyring.New(keyring.AES256GCM)
	st, err := Open(ctx, Config{DB: db, Dialect: d, Keyring: kr, Namespace: "bench", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	byKeyring, _ := field.NewColumn(kr, "messages", "body", field.Bind("user_id"))
	bySubject, _ := field.NewColumn(kr, "messages", "body", field.Bind("user_id"), field.PerSubject(st, "user_id"))
	pt := make([]byte, 500)
	row := field.RowInt(42).With(int64(7))
	buf := make([]byte, 0, 1024)
	for _, c := range []struct {
		name string
		col  *field.Column
	}{{"keyring", byKeyring}, {"subject", bySubject}} {
		if _, err := c.col.AppendSeal(nil, row, pt); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.col.AppendSeal(buf[:0], row, pt)
			}
		})
	}
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.SealingKey("7")
		}
	})
}

func benchDB(b *testing.B) (*sql.DB, field.Dialect) {
	db, err := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(b.TempDir(), "bench.db")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, field.SQLite
}
