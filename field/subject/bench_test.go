package subject

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
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

// BenchmarkForget compares a forget without and with a forget journal
// (one more append and fsync, before the commit), interleaved in one run.
func BenchmarkForget(b *testing.B) {
	ctx := context.Background()
	db, d := benchDB(b)
	kr, _ := keyring.New(keyring.AES256GCM)
	lg := &ledger.Ledger{DB: db, Dialect: d}
	if err := lg.Record(ctx, kr); err != nil {
		b.Fatal(err)
	}
	j, err := forgetlog.Open(b.TempDir(), kr)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for _, c := range []struct {
		name string
		j    *forgetlog.Journal
	}{{"plain", nil}, {"journaled", j}} {
		st, err := Open(ctx, Config{DB: db, Dialect: d, Keyring: kr, Ledger: lg, Namespace: "bench-" + c.name, Journal: c.j})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if err := st.Forget(ctx, fmt.Sprint("u", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
