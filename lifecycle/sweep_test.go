package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/lifecycle"
)

// TestRetireSweepsUnrecordedColumns: a service seals into two tables no
// ward job touched and records neither column (text form in one, binary
// in the other). The documented sequence — rotate, retire — used to
// retire the old key with every such value under it, unreadable for good.
// Retire now finds them in the database itself, names each column with
// its count and changes nothing; once both are re-sealed, it retires.
func TestRetireSweepsUnrecordedColumns(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 5)
		old := a.kr.Primary().ID
		memo, memoCol := unrecorded(t, a, d, "memo", "TEXT", field.Text, 7)
		files, filesCol := unrecorded(t, a, d, "files", d.Blob, field.Binary, 3)
		dbs := []lifecycle.Database{a.db}
		if _, err := lifecycle.Rotate(ctx, a.kr, dbs, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		var refs *lifecycle.ReferencedError
		_, err := lifecycle.Retire(ctx, a.kr, dbs, old)
		if !errors.As(err, &refs) || len(refs.References) != 2 {
			t.Fatalf("retire with 10 values under the key in columns nobody recorded: %v", err)
		}
		for _, want := range []struct {
			n     int
			table string
		}{{3, files}, {7, memo}} {
			if !slices.ContainsFunc(refs.References, func(r lifecycle.Reference) bool {
				return strings.HasPrefix(r.What, fmt.Sprintf("%d values in ", want.n)) && strings.Contains(r.What, want.table+".body are sealed under it, a column the ledger does not record")
			}) {
				t.Fatalf("no reference to %d values in %s: %+v", want.n, want.table, refs.References)
			}
		}
		if _, ok := a.kr.Lookup(old); !ok {
			t.Fatal("a refused retire removed the key")
		}
		for _, col := range []*field.Column{memoCol, filesCol} {
			job := &reseal.Job{DB: d.DB, Dialect: a.db.Dialect, Column: col, Key: "id"}
			if st, err := job.Run(ctx); err != nil || st.Resealed == 0 {
				t.Fatalf("reseal %s: %+v %v", col.Table(), st, err)
			}
		}
		if _, err := lifecycle.Retire(ctx, a.kr, dbs, old); err != nil {
			t.Fatalf("retire once re-sealed: %v", err)
		}
	})
}

// unrecorded creates a table the ledger does not record and seals n
// values into it for the app's keyring.
func unrecorded(t *testing.T, a *app, d dbtest.DB, prefix, typ string, enc field.Encoding, n int) (string, *field.Column) {
	t.Helper()
	table := d.Table(t, prefix)
	if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s)`, table, typ)); err != nil {
		t.Fatal(err)
	}
	col, err := field.NewColumn(a.kr, table, "body", field.WithEncoding(enc))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ct, err := col.Seal(field.RowInt(int64(i)), []byte(fmt.Sprint(prefix, " ", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.DB.Exec(a.db.Dialect.Rebind(`INSERT INTO `+table+` VALUES (?, ?)`), i, ct); err != nil {
			t.Fatal(err)
		}
	}
	return table, col
}
