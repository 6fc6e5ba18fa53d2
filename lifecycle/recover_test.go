package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// snapshot copies tables aside; rollback puts the copies back, as a
// database writer (or a failover that lost its last commits) would.
type snapshot struct {
	d      dbtest.DB
	tables []string
}

func takeSnapshot(t *testing.T, d dbtest.DB, tables ...string) snapshot {
	t.Helper()
	for _, tb := range tables {
		if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE bak_%s AS SELECT * FROM %s`, tb, tb)); err != nil {
			t.Fatal(err)
		}
	}
	return snapshot{d: d, tables: tables}
}

func (s snapshot) rollback(t *testing.T) {
	t.Helper()
	for _, tb := range s.tables {
		if _, err := s.d.DB.Exec(fmt.Sprintf(`DELETE FROM %s`, tb)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.d.DB.Exec(fmt.Sprintf(`INSERT INTO %s SELECT * FROM bak_%s`, tb, tb)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoverRollback: a database writer puts back an older copy of the
// ledger, the subject keys and tombstones and the values, from before a
// key was retired and four subjects were forgotten (one created in the
// lost part). Every check then refuses the ledger; the recovery without
// the journal refuses to finish; with it, it forgets the three whose keys
// came back, records the retired key as retired, lists the column for a
// census, and the service works again, every value and kept subject
// opening; a second recovery has nothing to do.
func TestRecoverRollback(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 10)
		old := a.kr.Primary().ID
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		jdir, open := a.journaledUsers(t, d)
		users := open()
		for i := range 6 {
			if _, err := users.SealingKey(fmt.Sprint("u", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := users.Forget(ctx, "u0"); err != nil {
			t.Fatal(err)
		}
		snap := takeSnapshot(t, d, a.db.Ledger.Table, subject.DefaultKeysTable, subject.DefaultTombstonesTable, subject.DefaultSessionsTable, a.col.Table())

		// The part the database loses: a retire, four forgets.
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); err != nil {
			t.Fatal(err)
		}
		if _, err := users.SealingKey("u6"); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"u1", "u2", "u3", "u6"} {
			if err := users.Forget(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		snap.rollback(t)

		if err := a.db.Ledger.Check(ctx, a.kr); !errors.Is(err, ledger.ErrReplayed) {
			t.Fatalf("after the rollback: %v", err)
		}
		if gone, _ := open().IsForgotten(ctx, "u1"); gone {
			t.Fatal("the rollback kept u1's tombstone")
		}
		_, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{})
		if !errors.Is(err, lifecycle.ErrUnrecoverable) {
			t.Fatalf("a recovery without the journal: %v", err)
		}
		var plan lifecycle.RecoveryPlan
		r, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jdir},
			Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }})
		if err != nil {
			t.Fatal(err)
		}
		ns := plan.Namespaces
		if r.Reapplied != 3 || len(ns) != 1 || ns[0].Anchored != 5 || ns[0].Journaled != 5 || ns[0].Reapply != 3 || ns[0].Lost != 0 || ns[0].Tombstones != 1 {
			t.Fatalf("recovered %d, namespaces %+v", r.Reapplied, ns)
		}
		if !slices.Equal(plan.Behind.Retired, []keyring.KeyID{old}) || plan.Behind.Writes == 0 || !slices.Equal(plan.Recheck, []string{a.col.Table() + ".body"}) {
			t.Fatalf("plan %+v", plan)
		}
		st, err := a.db.Ledger.Verified(ctx, a.kr)
		if err != nil {
			t.Fatalf("after the recovery: %v", err)
		}
		if i := slices.IndexFunc(st.Keys, func(k ledger.Key) bool { return k.ID == old }); i < 0 || st.Keys[i].State != ledger.RetiredState {
			t.Fatalf("the retired key is recorded as %+v", st.Keys)
		}
		if len(st.Recoveries) != 1 || !slices.Equal(st.Recheck, plan.Recheck) {
			t.Fatalf("ledger after the recovery: %+v", st)
		}
		fresh := open()
		for i := range 6 {
			u := fmt.Sprint("u", i)
			gone, err := fresh.IsForgotten(ctx, u)
			_, kerr := fresh.SealingKey(u)
			if err != nil || gone != (i <= 3) || (kerr == nil) == gone {
				t.Fatalf("%s: forgotten %v (%v), key %v", u, gone, err, kerr)
			}
		}
		if valid, counted, err := fresh.Audit(ctx); err != nil || valid != 4 || counted != 4 {
			t.Fatalf("audit: %d valid, %d counted, %v", valid, counted, err)
		}
		if got := a.keysOf(t); len(got) != 1 || got[old] != 0 {
			t.Fatalf("values by key after the recovery: %v", got)
		}
		again, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jdir}})
		if err != nil || again.State != nil || again.Plan.NeedsRecovery() {
			t.Fatalf("a second recovery: %+v %v", again, err)
		}
		if err := a.db.Ledger.Rechecked(ctx, a.kr, a.col.Table()+".body"); err != nil {
			t.Fatal(err)
		}
		if st, err := a.db.Ledger.Verified(ctx, a.kr); err != nil || len(st.Recheck) != 0 {
			t.Fatalf("after the census: %+v %v", st, err)
		}
	})
}

// TestRecoverSparesRecycledIDs: after a restore to before a subject was
// created and forgotten, a new subject receives its ID (a sequence or
// rowid starting again) and a key; the journal records the old subject's
// forget, bound to its key versions (record v2), so neither the audit nor
// a later recovery forgets the new one — the recovery counts it as
// recycled (it forgot the innocent subject: the journal named the ID
// alone). A key row of the old subject put back with it is still
// forgotten.
func TestRecoverSparesRecycledIDs(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 0)
		jdir, open := a.journaledUsers(t, d)
		users := open()
		snap := a.keyed(t, d, users, "u0")
		for _, u := range []string{"u7", "u8"} {
			if _, err := users.SealingKey(u); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.DB.Exec(`CREATE TABLE kept_u8 AS SELECT * FROM ` + subject.DefaultKeysTable + ` WHERE subject = 'u8'`); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"u7", "u8"} {
			if err := users.Forget(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		snap.rollback(t)
		if _, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jdir}}); err != nil {
			t.Fatalf("the recovery after the restore: %v", err)
		}
		// The service again: a new subject receives u7's ID; u8's old key
		// row is put back by a database writer.
		fresh := open()
		if _, err := fresh.SealingKey("u7"); err != nil {
			t.Fatalf("a new subject with a recycled ID: %v", err)
		}
		if _, err := d.DB.Exec(`INSERT INTO ` + subject.DefaultKeysTable + ` SELECT * FROM kept_u8`); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fresh.Audit(ctx); !errors.Is(err, subject.ErrTombstoneTampered) || !strings.Contains(err.Error(), "1 subjects") {
			t.Fatalf("the audit: %v (u8 is back, u7 is new)", err)
		}
		var plan lifecycle.RecoveryPlan
		if _, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jdir},
			Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }}); err != nil {
			t.Fatal(err)
		}
		if ns := plan.Namespaces; len(ns) != 1 || ns[0].Recycled != 1 || ns[0].Reapply != 1 {
			t.Fatalf("the second recovery's plan: %+v", plan.Namespaces)
		}
		after := open()
		for u, want := range map[string]bool{"u7": false, "u8": true, "u0": false} {
			if gone, err := after.IsForgotten(ctx, u); err != nil || gone != want {
				t.Fatalf("%s forgotten: %v %v, want %v", u, gone, err, want)
			}
		}
		if _, err := after.SealingKey("u7"); err != nil {
			t.Fatalf("the new subject's key after the recovery: %v", err)
		}
	})
}

// keyed gives each subject a key in users, then snapshots the ledger and
// the subject tables: what the database will go back to.
func (a *app) keyed(t *testing.T, d dbtest.DB, users *subject.Store, subjects ...string) snapshot {
	t.Helper()
	for _, u := range subjects {
		if _, err := users.SealingKey(u); err != nil {
			t.Fatal(err)
		}
	}
	return takeSnapshot(t, d, a.db.Ledger.Table, subject.DefaultKeysTable, subject.DefaultTombstonesTable, subject.DefaultSessionsTable)
}

// journaledUsers opens a forget journal for the app's keyring and returns
// its folder and a function opening the "users" store on it, as a fresh
// process of the service would.
func (a *app) journaledUsers(t *testing.T, d dbtest.DB) (string, func() *subject.Store) {
	t.Helper()
	jdir := t.TempDir()
	j, err := forgetlog.Open(jdir, a.kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return jdir, func() *subject.Store {
		s, err := subject.Open(context.Background(), subject.Config{DB: d.DB, Dialect: a.db.Dialect, Keyring: a.kr, Ledger: a.db.Ledger, Namespace: "users", Journal: j})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestRecoverByIdentity: a forget whose transaction rolled back (process
// B's) leaves a journal record chained from the same tally as the forget
// that committed after it (process A's, u1). After the database loses
// u1's forget, B's journal alone does not make up for A's: the recovery
// refuses, naming one forget lost (it passed, counting B's record, and
// u1's key opened again). With both journals it forgets u1 and not u2,
// whose forget never happened, and B's record no longer reports u2 to
// the audit.
func TestRecoverByIdentity(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 0)
		jA, openA := a.journaledUsers(t, d)
		jB, openB := a.journaledUsers(t, d)
		users := openA()
		snap := a.keyed(t, d, users, "u1", "u2")
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := openB().ForgetIn(ctx, tx, "u2"); err != nil {
			t.Fatal(err)
		}
		tx.Rollback() // the account's deletion failed: u2 stays
		if err := users.Forget(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		snap.rollback(t)

		var plan lifecycle.RecoveryPlan
		_, err = lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jB},
			Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }})
		if !errors.Is(err, lifecycle.ErrUnrecoverable) {
			t.Fatalf("a recovery with B's journal alone: %v (plan %+v)", err, plan.Namespaces)
		}
		r, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jA, jB},
			Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }})
		if err != nil {
			t.Fatal(err)
		}
		want := forgetlog.Settlement{ByIdentity: true, Committed: 1, Uncommitted: 1}
		if ns := plan.Namespaces; r.Reapplied != 1 || len(ns) != 1 || ns[0].Settlement != want || ns[0].Lost != 0 || ns[0].Journaled != 1 {
			t.Fatalf("reapplied %d, plan %+v", r.Reapplied, plan.Namespaces)
		}
		fresh := openB()
		for u, want := range map[string]bool{"u1": true, "u2": false} {
			if gone, err := fresh.IsForgotten(ctx, u); err != nil || gone != want {
				t.Fatalf("%s forgotten: %v %v, want %v", u, gone, err, want)
			}
		}
		if _, err := fresh.SealingKey("u2"); err != nil {
			t.Fatalf("u2's key: %v", err)
		}
		if _, _, err := fresh.Audit(ctx); err != nil {
			t.Fatalf("the audit with B's journal: %v", err)
		}
	})
}

// TestRecoverRefusesPlantedRecords: the holder of a keyring file from
// before a rotation and the retire of its key plants, in a journal folder,
// records forgetting a live user: one from before tallies (v2, MAC'd
// with the root, which every copy of the file derives) and one chained
// past the anchor's tally under the retired epoch. After the database
// loses a forget, the recovery forgets the lost user and not the victim,
// dropping both planted records (the v2 record made the recovery forget
// the victim before).
func TestRecoverRefusesPlantedRecords(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 0)
		oldFile := filepath.Join(t.TempDir(), "old.json")
		if b, err := os.ReadFile(a.kr.Path()); err != nil || os.WriteFile(oldFile, b, 0o600) != nil {
			t.Fatal(err)
		}
		old := a.kr.Primary().ID
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); err != nil {
			t.Fatal(err)
		}
		jdir, open := a.journaledUsers(t, d)
		users := open()
		snap := a.keyed(t, d, users, "lost", "victim")
		if err := users.Forget(ctx, "lost"); err != nil {
			t.Fatal(err)
		}
		st, err := a.db.Ledger.Verified(ctx, a.kr)
		if err != nil {
			t.Fatal(err)
		}
		snap.rollback(t)

		oldKr, err := keyring.Load(ctx, oldFile, a.mk)
		if err != nil {
			t.Fatal(err)
		}
		planter, err := forgetlog.Open(jdir, oldKr)
		if err != nil {
			t.Fatal(err)
		}
		victim := forgetlog.Entry{Database: st.Database, Namespace: "users", Subject: "victim", BindKeys: true}
		past := victim
		past.Chain, past.Prev = true, st.Tally(subject.ForgetCounter("users"))
		for _, e := range []forgetlog.Entry{victim, past} {
			if err := planter.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		planter.Close()

		var plan lifecycle.RecoveryPlan
		r, err := lifecycle.Recover(ctx, a.kr, a.db, lifecycle.RecoverOptions{Journals: []string{jdir},
			Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }})
		if err != nil {
			t.Fatal(err)
		}
		want := forgetlog.Settlement{ByIdentity: true, Committed: 1, Unproven: 1, Earlier: 1}
		if ns := plan.Namespaces; r.Reapplied != 1 || len(ns) != 1 || ns[0].Settlement != want {
			t.Fatalf("reapplied %d, plan %+v", r.Reapplied, plan.Namespaces)
		}
		fresh := open()
		for u, want := range map[string]bool{"lost": true, "victim": false} {
			if gone, err := fresh.IsForgotten(ctx, u); err != nil || gone != want {
				t.Fatalf("%s forgotten: %v %v, want %v", u, gone, err, want)
			}
		}
	})
}
