package ormkit

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestRecorded: the first Get records the indexed column and its index
// (v2 under the current epoch) in the ledger; the index is asked for in
// the same columns only; values are computed only in the transaction the
// context carries; Every refreshes until its context ends.
func TestRecorded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kr, err := keyring.Create(ctx, filepath.Join(dir, "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT, email_idx BLOB UNIQUE, email_idx2 BLOB UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	lg := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	col, err := field.NewColumn(kr, "users", "email")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorded(kr, lg, ledger.IndexerOptions{})
	src := ledger.ColumnOf(col, "id")
	if _, err := r.Get(ctx, src, "email_idx", "email_idx2"); err != nil {
		t.Fatal(err)
	}
	st, err := lg.Verified(ctx, kr)
	if err != nil || len(st.Columns) != 1 || len(st.Indexes) != 1 || st.Indexes[0].Epoch != kr.Primary().ID || st.Indexes[0].Normalizer != "fold" {
		t.Fatalf("recorded %+v, %v", st, err)
	}
	if _, err := r.Get(ctx, src, "email_idx2", "email_idx"); err == nil {
		t.Fatal("the index asked for in other columns")
	}
	if _, _, err := r.Values(ctx, src, "email_idx", "email_idx2", "a@example.com"); !errors.Is(err, ErrNoTx) {
		t.Fatalf("values without a transaction: %v", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	a, b, err := r.Values(WithTx(ctx, tx), src, "email_idx", "email_idx2", "A@Example.com")
	if err != nil || b != nil {
		t.Fatalf("%x %x %v", a, b, err)
	}
	if e, err := field.IndexEpoch(a); err != nil || e != kr.Primary().ID {
		t.Fatalf("epoch %v %v", e, err)
	}
	if TxFrom(ctx) != nil || TxFrom(WithTx(ctx, tx)) != tx {
		t.Fatal("TxFrom")
	}
	tx.Rollback()
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		Every(wctx, time.Millisecond, func(context.Context) error { n.Add(1); return errors.New("x") }, func(error) {
			if n.Load() >= 3 {
				cancel()
			}
		})
		close(done)
	}()
	<-done
	go r.Watch(wctx, time.Millisecond, nil) // returns at once: ctx ended
}
