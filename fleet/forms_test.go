package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// formsFleet is a database, a keyring file and a registry with its own
// ledger, for processes that each load the keyring and have a gate.
type formsFleet struct {
	t    *testing.T
	ctx  context.Context
	db   *sql.DB
	d    field.Dialect
	path string
	mk   *local.MasterKey
	reg  string
	lg   string
}

func newFormsFleet(t *testing.T, db *sql.DB, d field.Dialect) *formsFleet {
	ctx := context.Background()
	f := &formsFleet{t: t, ctx: ctx, db: db, d: d, path: filepath.Join(t.TempDir(), "kr.json"), mk: local.Generate(),
		reg: dbtest.DB{DB: db}.Table(t, "fleet"), lg: dbtest.DB{DB: db}.Table(t, "ledger")}
	kr, err := keyring.Create(ctx, f.path, f.mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&ledger.Ledger{DB: db, Dialect: d, Table: f.lg}).Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	return f
}

// process loads the keyring and returns a registry whose gate declares
// can and wants want.
func (f *formsFleet) process(can, want []fleetgate.Form) (*Registry, *keyring.Keyring) {
	kr, err := keyring.Load(f.ctx, f.path, f.mk)
	if err != nil {
		f.t.Fatal(err)
	}
	g := fleetgate.New()
	g.Declare(can...)
	g.Want(want...)
	return &Registry{DB: f.db, Dialect: f.d, Table: f.reg, Gate: g, Ledger: &ledger.Ledger{DB: f.db, Dialect: f.d, Table: f.lg}}, kr
}

func (f *formsFleet) join(r *Registry, kr *keyring.Keyring) *Member {
	m, err := r.Join(f.ctx, kr, time.Hour, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// beat beats every member, in order, n times.
func (f *formsFleet) beat(n int, ms ...*Member) {
	for range n {
		for _, m := range ms {
			if err := m.Beat(f.ctx); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// TestFormOpensWhenEveryProcessReads: a form a process wants waits for a
// registered process that does not read it, opens once that process left
// cleanly, and never in the round that began the wait.
func TestFormOpensWhenEveryProcessReads(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Sealed("users", "email")
		oldR, oldK := f.process(nil, nil)
		old := f.join(oldR, oldK)
		newR, newK := f.process(nil, []fleetgate.Form{w})
		m := f.join(newR, newK)
		f.beat(3, m, old)
		if newR.Gate.Allows(w) {
			t.Fatal("the form opened while a process that does not read it runs")
		}
		st, err := newR.FormsState(f.ctx, newK)
		if err != nil || len(st) != 1 || !slices.Equal(st[0].Waiting, []string{old.ID()}) || st[0].Release != fleetgate.Release {
			t.Fatalf("the ledger's record of the wait: %+v %v", st, err)
		}
		if err := old.Leave(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.beat(1, m)
		if !newR.Gate.Allows(w) {
			st, _ := newR.FormsState(f.ctx, newK)
			t.Fatalf("the form did not open once the other process left: %+v", st)
		}
		// A process that lacks it now refuses to join, naming the form.
		lateR, lateK := f.process(nil, nil)
		_, err = lateR.Join(f.ctx, lateK, time.Hour, nil)
		var me *fleetgate.MissingError
		if !errors.As(err, &me) || len(me.Forms) != 1 || me.Forms[0].Form != w || me.Forms[0].Release != fleetgate.Release {
			t.Fatalf("a process lacking an opened form joined: %v", err)
		}
		// One that reads it joins, and its gate allows it at once.
		okR, okK := f.process([]fleetgate.Form{w}, nil)
		f.join(okR, okK)
		if !okR.Gate.Allows(w) {
			t.Fatal("a joining process does not learn the opened forms")
		}
	})
}

// TestFormWaitSurvivesDeletion: a database writer who deletes the
// registration of a process that does not read a form does not open it;
// a process that joins during the wait without the form joins the wait;
// the operator's skip does open it.
func TestFormWaitSurvivesDeletion(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Pepper
		oldR, oldK := f.process(nil, nil)
		old := f.join(oldR, oldK)
		newR, newK := f.process(nil, []fleetgate.Form{w})
		m := f.join(newR, newK)
		f.beat(2, m)
		name, _ := d.Quote(f.reg)
		if _, err := db.Exec(d.Rebind(fmt.Sprintf(`DELETE FROM %s WHERE id = ?`, name)), old.ID()); err != nil {
			t.Fatal(err)
		}
		lateR, lateK := f.process(nil, nil)
		late := f.join(lateR, lateK)
		f.beat(3, m)
		st, _ := newR.FormsState(f.ctx, newK)
		if newR.Gate.Allows(w) || len(st) != 1 || !slices.Contains(st[0].Waiting, old.ID()) || !slices.Contains(st[0].Waiting, late.ID()) {
			t.Fatalf("a deleted registration or a late joiner let the form go: %+v", st)
		}
		late.Leave(f.ctx)
		changed, err := newR.SkipForms(f.ctx, newK, []string{old.ID()})
		if err != nil || !slices.Equal(changed, []fleetgate.Form{w}) {
			t.Fatalf("skip: %v %v", changed, err)
		}
		f.beat(1, m)
		if !newR.Gate.Allows(w) {
			st, _ := newR.FormsState(f.ctx, newK)
			t.Fatalf("the form did not open after the operator skipped the vanished process: %+v", st)
		}
	})
}

// TestFormsRowMAC: a registry row whose forms a database writer changed
// fails its MAC, and such a row blocks a wait.
func TestFormsRowMAC(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Subject("notes", "body")
		oldR, oldK := f.process(nil, nil)
		old := f.join(oldR, oldK)
		newR, newK := f.process(nil, []fleetgate.Form{w})
		m := f.join(newR, newK)
		name, _ := d.Quote(f.reg)
		if _, err := db.Exec(d.Rebind(fmt.Sprintf(`UPDATE %s SET caps = ? WHERE id = ?`, name)), string(w), old.ID()); err != nil {
			t.Fatal(err)
		}
		ps, err := newR.List(f.ctx, newK)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ps, func(p Process) bool { return p.ID == old.ID() })
		if i < 0 || !ps[i].Tampered {
			t.Fatalf("a row given a form by a writer passes its MAC: %+v", ps)
		}
		f.beat(3, m)
		if newR.Gate.Allows(w) {
			t.Fatal("a tampered row let the form open")
		}
	})
}

// TestRegistryMigratesForms: a registry table from a release before forms
// gets its forms column, and its rows keep verifying.
func TestRegistryMigratesForms(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		if d == field.MySQL {
			t.Skip("no release before forms ran on MySQL: there is no older registry to migrate")
		}
		f := newFormsFleet(t, db, d)
		name, _ := d.Quote(f.reg)
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE %s (
			id TEXT PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, keyring TEXT NOT NULL,
			generation BIGINT NOT NULL, keys TEXT NOT NULL, started BIGINT NOT NULL, seen BIGINT NOT NULL,
			exited INTEGER NOT NULL, mac TEXT NOT NULL)`, name)); err != nil {
			t.Fatal(err)
		}
		r, kr := f.process([]fleetgate.Form{fleetgate.Ciphertext(3)}, nil)
		m := f.join(r, kr)
		plain, pk := f.process(nil, nil)
		plain.Gate = nil
		pm := f.join(plain, pk)
		ps, err := r.List(f.ctx, kr)
		if err != nil || len(ps) != 2 || ps[0].Tampered || ps[1].Tampered {
			t.Fatalf("after the migration: %+v %v", ps, err)
		}
		for _, p := range ps {
			if p.ID == m.ID() && !p.Can(fleetgate.Ciphertext(3)) || p.ID == pm.ID() && len(p.Forms) != 0 {
				t.Fatalf("forms read back: %+v", p)
			}
		}
	})
}

// TestFormWaitsForExpectedProcesses: with the operator's count of the
// fleet in the ledger, a form every registered process reads still waits
// until that many read it (the others never registered).
func TestFormWaitsForExpectedProcesses(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Sealed("users", "email")
		r1, k1 := f.process(nil, []fleetgate.Form{w})
		if err := r1.Ledger.SetExpect(f.ctx, k1, 3); err != nil {
			t.Fatal(err)
		}
		m1 := f.join(r1, k1)
		r2, k2 := f.process(nil, []fleetgate.Form{w})
		m2 := f.join(r2, k2)
		f.beat(3, m1, m2)
		if r1.Gate.Allows(w) {
			t.Fatal("the form opened with 2 of 3 expected processes")
		}
		r3, k3 := f.process([]fleetgate.Form{w}, nil)
		f.join(r3, k3)
		f.beat(1, m1)
		if !r1.Gate.Allows(w) {
			t.Fatal("the form did not open with the 3 expected processes")
		}
	})
}

// TestReady: a job may write a form once no form-aware process lacks it
// and no wait for it is under way; a process that declares no form is
// reported as unknown.
func TestReady(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Sealed("notes", "body")
		aware, ak := f.process([]fleetgate.Form{fleetgate.Pepper}, nil)
		am := f.join(aware, ak)
		plain, pk := f.process(nil, nil)
		plain.Gate = nil
		f.join(plain, pk)
		unknown, err := aware.Ready(f.ctx, ak, w)
		var nr *FormNotReadyError
		if !errors.As(err, &nr) || len(unknown) != 1 || !strings.Contains(err.Error(), am.ID()) {
			t.Fatalf("with a form-aware process that lacks the form: %v, unknown %v", err, unknown)
		}
		am.Leave(f.ctx)
		if unknown, err := aware.Ready(f.ctx, ak, w); err != nil || len(unknown) != 1 {
			t.Fatalf("once it left: %v, unknown %v", err, unknown)
		}
		wr, wk := f.process(nil, []fleetgate.Form{w})
		wm := f.join(wr, wk)
		f.join(f.process(nil, nil)) // a form-aware process without it joins the wait
		f.beat(1, wm)
		if _, err := aware.Ready(f.ctx, ak, w); !errors.As(err, &nr) {
			t.Fatalf("during the wait: %v", err)
		}
	})
}

// TestWriteGate: a job's gate allows what its caller checked, and
// ciphertext v4 only while every registered live process reads it: not
// with a process that declares forms but not v4 (a release before v4), nor
// with one that declares none (a release before forms).
func TestWriteGate(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		v4, sealed := fleetgate.Ciphertext(4), fleetgate.Sealed("notes", "body")
		reg, kr := f.process(nil, nil)
		if g := reg.WriteGate(f.ctx, kr, sealed); !g.Allows(v4) || !g.Allows(sealed) {
			t.Fatal("no process registered: v4 not allowed")
		}
		older, ok := f.process([]fleetgate.Form{fleetgate.Ciphertext(3), sealed}, nil)
		om := f.join(older, ok)
		if g := reg.WriteGate(f.ctx, kr, sealed); g.Allows(v4) || !g.Allows(sealed) {
			t.Fatal("a process that reads v3 only: v4 allowed")
		}
		om.Leave(f.ctx)
		formless, fk := f.process(nil, nil)
		formless.Gate = nil
		fm := f.join(formless, fk)
		if g := reg.WriteGate(f.ctx, kr); g.Allows(v4) {
			t.Fatal("a process of a release before forms: v4 allowed")
		}
		fm.Leave(f.ctx)
		f.join(f.process([]fleetgate.Form{v4}, nil))
		if g := reg.WriteGate(f.ctx, kr); !g.Allows(v4) {
			t.Fatal("every process reads v4: v4 not allowed")
		}
	})
}

// TestDeletedRegistrationRejoins: a database writer deletes the row of a
// running process that does not read a form, just before a process that
// wants the form begins the wait. The wait's first read does not see the
// process; its heartbeat used to update no row and never register again,
// so the form opened at the next round while it still ran. Its next
// heartbeat now registers it again and joins the wait, which then holds;
// once it leaves, the form opens. A heartbeat after Leave registers
// nothing.
func TestDeletedRegistrationRejoins(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		f := newFormsFleet(t, db, d)
		w := fleetgate.Sealed("users", "email")
		oldR, oldK := f.process(nil, nil)
		old := f.join(oldR, oldK)
		newR, newK := f.process(nil, []fleetgate.Form{w})
		m := f.join(newR, newK)
		if _, err := db.Exec(d.Rebind(`DELETE FROM `+f.reg+` WHERE id = ?`), old.ID()); err != nil {
			t.Fatal(err)
		}
		f.beat(1, m)   // the wait begins, and reads a registry without the old process
		f.beat(1, old) // registers again, and joins the wait
		f.beat(3, m)
		if newR.Gate.Allows(w) {
			t.Fatal("the form opened while a process whose registration was deleted still runs")
		}
		st, err := newR.FormsState(f.ctx, newK)
		if err != nil || len(st) != 1 || !slices.Contains(st[0].Waiting, old.ID()) {
			t.Fatalf("the wait after the process registered again: %+v %v", st, err)
		}
		ps, err := newR.List(f.ctx, newK)
		if err != nil || !slices.ContainsFunc(ps, func(p Process) bool { return p.ID == old.ID() && !p.Tampered && !p.Exited }) {
			t.Fatalf("the process is not registered again: %+v %v", ps, err)
		}
		if err := old.Leave(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.beat(1, m)
		if !newR.Gate.Allows(w) {
			t.Fatal("the form did not open once the process left")
		}
		// A heartbeat after Leave never registers it again.
		if err := old.write(f.ctx, false); err != nil {
			t.Fatal(err)
		}
		if ps, _ := newR.List(f.ctx, newK); slices.ContainsFunc(ps, func(p Process) bool { return p.ID == old.ID() && !p.Exited }) {
			t.Fatal("a process that left was registered again")
		}
	})
}
