package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// app is an application's database with a keyring file, a recorded
// column of n sealed values and one running process in the fleet.
type app struct {
	kr  *keyring.Keyring
	mk  *local.MasterKey
	db  lifecycle.Database
	col *field.Column
}

func newApp(t *testing.T, d dbtest.DB, n int) *app {
	t.Helper()
	ctx := context.Background()
	dialect, err := field.ParseDialect(d.Driver)
	if err != nil {
		t.Fatal(err)
	}
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	table := d.Table(t, "notes")
	if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s)`, table, d.Blob)); err != nil {
		t.Fatal(err)
	}
	a := &app{kr: kr, mk: mk, db: lifecycle.Database{Name: d.Name, DB: d.DB, Dialect: dialect,
		Ledger: &ledger.Ledger{DB: d.DB, Dialect: dialect, Table: d.Table(t, "ledger")}}}
	if a.col, err = field.NewColumn(kr, table, "body"); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Ledger.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Ledger.RecordColumns(ctx, kr, ledger.ColumnOf(a.col, "id")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ct, err := a.col.Seal(field.RowInt(int64(i)), []byte(fmt.Sprint("note ", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.DB.Exec(dialect.Rebind(`INSERT INTO `+table+` VALUES (?, ?)`), i, ct); err != nil {
			t.Fatal(err)
		}
	}
	m, err := (&fleet.Registry{DB: d.DB, Dialect: dialect, Ledger: a.db.Ledger}).Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Leave(context.Background()) })
	return a
}

// keysOf counts the table's values by the key that sealed them.
func (a *app) keysOf(t *testing.T) map[keyring.KeyID]int {
	t.Helper()
	rows, err := a.db.DB.Query(`SELECT id, body FROM ` + a.col.Table())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[keyring.KeyID]int{}
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		if err := rows.Scan(&id, &ct); err != nil {
			t.Fatal(err)
		}
		if _, err := a.col.Open(field.RowInt(id), ct); err != nil {
			t.Fatalf("row %d: %v", id, err)
		}
		k, err := ct.KeyID()
		if err != nil {
			t.Fatal(err)
		}
		out[k]++
	}
	return out
}

// TestRotateAndRetire: an application rotates across its fleet from its
// own code, the steps reported in order; retiring the old key is refused
// while values are under it and succeeds once they moved.
func TestRotateAndRetire(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 30)
		old := a.kr.Primary().ID
		var steps []string
		obs := lifecycle.Observer{
			Added: func(keyring.KeyID, bool) { steps = append(steps, "added") },
			Ready: func(_, what string, res fleet.Awaited) {
				steps = append(steps, fmt.Sprintf("ready %d", len(res.Ready)))
			},
			Promoted: func(keyring.KeyID, keyring.KeyID) { steps = append(steps, "promoted") },
			Column: func(c lifecycle.ColumnResult, _ error) {
				steps = append(steps, fmt.Sprintf("resealed %d", c.Stats.Resealed))
			},
		}
		r, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{NoReseal: true, Observer: obs, Wait: time.Minute})
		if err != nil || !r.Promoted || r.Old != old || a.kr.Primary().ID != r.Key {
			t.Fatalf("rotate: %+v %v", r, err)
		}
		var refs *lifecycle.ReferencedError
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); !errors.As(err, &refs) || len(refs.References) != 1 {
			t.Fatalf("retire with 30 values under the key: %v", err)
		}
		if got := a.keysOf(t); got[old] != 30 {
			t.Fatalf("a refused retire changed values: %v", got)
		}
		// A second rotation, which re-seals: every value moves to its key.
		r, err = lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Observer: obs, Wait: time.Minute})
		if err != nil || len(r.Columns) != 1 || r.Columns[0].Stats.Resealed != 30 {
			t.Fatalf("second rotate: %+v %v", r, err)
		}
		if got := a.keysOf(t); got[r.Key] != 30 {
			t.Fatalf("after the rotation: %v", got)
		}
		want := "[added ready 1 promoted ready 1 added ready 1 promoted ready 1 resealed 30]"
		if fmt.Sprint(steps) != want {
			t.Fatalf("steps %v, want %s", steps, want)
		}
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); err != nil {
			t.Fatalf("retire: %v", err)
		}
		if _, ok := a.kr.Lookup(old); ok {
			t.Fatal("the retired key is still in the keyring")
		}
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, a.kr.Primary().ID); !errors.Is(err, lifecycle.ErrPrimary) {
			t.Fatalf("retiring the primary: %v", err)
		}
	})
}

// TestRotateChecksTheLedger: a rotation refuses a database whose ledger
// was deleted while the keyring anchors it, before adding any key.
func TestRotateChecksTheLedger(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		a := newApp(t, d, 1)
		if _, err := d.DB.Exec(`DELETE FROM ` + a.db.Ledger.Table); err != nil {
			t.Fatal(err)
		}
		n := len(a.kr.Keys())
		_, err := lifecycle.Rotate(context.Background(), a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{})
		var de *lifecycle.DatabaseError
		if !errors.Is(err, ledger.ErrMissing) || !errors.As(err, &de) || de.DB != d.Name || len(a.kr.Keys()) != n {
			t.Fatalf("rotate over a deleted ledger: %v (%d keys, had %d)", err, len(a.kr.Keys()), n)
		}
	})
}

// TestRotateWaitsForTheFleet: a registered process that never loads the
// new key holds the promotion back; the wait ends naming it, with the key
// still decrypt-only, and once it leaves a second run continues with the
// same key.
func TestRotateWaitsForTheFleet(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 1)
		// A process with its own copy of the keyring file, which it does
		// not watch: it never holds the new key.
		frozen, err := keyring.Load(ctx, a.kr.Path(), a.mk)
		if err != nil {
			t.Fatal(err)
		}
		m, err := (&fleet.Registry{DB: d.DB, Dialect: a.db.Dialect, Ledger: a.db.Ledger}).Join(ctx, frozen, 20*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		old := a.kr.Primary().ID
		r, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: 2 * time.Second, Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}})
		var nr *fleet.NotReadyError
		if !errors.As(err, &nr) || len(nr.Waiting) != 1 || nr.Waiting[0].ID != m.ID() || r.Promoted || a.kr.Primary().ID != old {
			t.Fatalf("rotate with a frozen process: %+v %v", r, err)
		}
		if err := m.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		again, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute})
		if err != nil || !again.Continued || again.Key != r.Key || a.kr.Primary().ID != r.Key {
			t.Fatalf("second rotate: %+v %v", again, err)
		}
	})
}

// TestSubjectLifecycles: subject keys re-wrapped by shards cover every
// subject once; a re-key gives each subject a new version and re-seals the
// per-subject column under it; Reseal then finds everything current.
func TestSubjectLifecycles(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 0)
		users, err := subject.Open(ctx, subject.Config{DB: d.DB, Dialect: a.db.Dialect, Keyring: a.kr, Ledger: a.db.Ledger, Namespace: "users", TTL: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		table := d.Table(t, "msgs")
		if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s)`, table, d.Blob)); err != nil {
			t.Fatal(err)
		}
		col, err := field.NewColumn(a.kr, table, "body", field.Bind("user_id"), field.PerSubject(users, "user_id"))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.db.Ledger.RecordColumns(ctx, a.kr, ledger.ColumnOf(col, "id")); err != nil {
			t.Fatal(err)
		}
		const n = 12
		for i := range n {
			u := fmt.Sprint("user-", i)
			ct, err := col.Seal(field.RowInt(int64(i)).With(u), []byte("hello "+u))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.DB.Exec(a.db.Dialect.Rebind(`INSERT INTO `+table+` VALUES (?, ?, ?)`), i, u, ct); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{NoReseal: true, Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		total := int64(0)
		for i := range 3 {
			res, err := lifecycle.ResealSubjects(ctx, a.kr, a.db, subject.ResealOptions{Shard: i, Shards: 3}, lifecycle.Observer{})
			if err != nil || len(res) != 1 || res[0].Namespace != "users" {
				t.Fatalf("shard %d: %+v %v", i, res, err)
			}
			total += res[0].Reseal.Resealed
		}
		if total != n {
			t.Fatalf("3 shards re-wrapped %d keys, want %d", total, n)
		}
		subs, cols, err := lifecycle.RekeySubjects(ctx, a.kr, a.db, lifecycle.Observer{})
		if err != nil || len(subs) != 1 || subs[0].Rekey.Rotated != n || len(cols) != 1 || cols[0].Stats.Resealed != n {
			t.Fatalf("rekey: %+v %+v %v", subs, cols, err)
		}
		for i := range n {
			u := fmt.Sprint("user-", i)
			var ct field.Ciphertext
			if err := d.DB.QueryRow(a.db.Dialect.Rebind(`SELECT body FROM `+table+` WHERE id = ?`), i).Scan(&ct); err != nil {
				t.Fatal(err)
			}
			if got, err := col.OpenString(field.RowInt(int64(i)).With(u), ct); err != nil || got != "hello "+u {
				t.Fatalf("row %d after the re-key: %q %v", i, got, err)
			}
		}
		cols, subs, err = lifecycle.Reseal(ctx, a.kr, a.db, lifecycle.Observer{})
		if err != nil || len(cols) != 2 || cols[1].Stats.Resealed != 0 || subs[0].Reseal.Resealed != 0 {
			t.Fatalf("reseal after all that: %+v %+v %v", cols, subs, err)
		}
	})
}

// TestRetireKeepsAnIndexEpoch: a blind index v2 is computed under the
// integrity epoch the ledger records for it, so retiring that epoch's key
// is refused (its stored values would match nothing) and changes nothing;
// a rotation leaves the index where it was.
func TestRetireKeepsAnIndexEpoch(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 0)
		old := a.kr.Primary().ID
		x, err := a.db.Ledger.Index(ctx, a.kr, ledger.IndexColumn{Table: a.col.Table(), Column: "body", Index: "body_idx"}, field.NFC)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		var refs *lifecycle.ReferencedError
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); !errors.As(err, &refs) || len(refs.References) != 1 {
			t.Fatalf("retiring the index's epoch: %v", err)
		}
		again, err := a.db.Ledger.Index(ctx, a.kr, ledger.IndexColumn{Table: a.col.Table(), Column: "body", Index: "body_idx"}, field.NFC)
		if err != nil || again.Epoch() != old || string(again.Compute("v")) != string(x.Compute("v")) {
			t.Fatalf("the index after a refused retire: %v", err)
		}
	})
}
