package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// users is how many users the service has; forgotten, how many of them
// are forgotten in the tail a failover loses.
const (
	users     = 20
	forgotten = 5
)

// tail does, on the primary, what a failover then loses: the rest of a
// re-encryption from plaintext (cut calls detach once part of it has
// reached the standby; nil: none of it reaches it), forgets, and a fleet
// rotation (a new key promoted, every value re-sealed under it).
func (s *service) tail(t *testing.T, cut func()) {
	t.Helper()
	ctx := context.Background()
	if err := s.lg.RecordColumns(ctx, s.kr, ledger.ColumnOf(s.col, "id")); err != nil {
		t.Fatal(err)
	}
	job := &reseal.Job{DB: s.db, Dialect: field.Postgres, Column: s.col, Key: "id", FromPlaintext: true, BatchSize: 100, Pause: 20 * time.Millisecond}
	done := make(chan error, 1)
	var st reseal.Stats
	go func() { var err error; st, err = job.Run(ctx); done <- err }()
	if cut != nil {
		for c := s.census(t); c.Plaintext > 2000-sealed-300; c = s.census(t) {
			time.Sleep(10 * time.Millisecond)
		}
		cut()
	}
	if err := <-done; err != nil || st.Plaintext != 2000-sealed {
		t.Fatalf("encrypt: %+v %v", st, err)
	}
	for i := range forgotten {
		if err := s.users.Forget(ctx, fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := lifecycle.Rotate(ctx, s.kr, []lifecycle.Database{{Name: "primary", DB: s.db, Dialect: field.Postgres, Ledger: s.lg}}, lifecycle.RotateOptions{Wait: time.Minute})
	if err != nil || !r.Promoted || len(r.Columns) != 1 {
		t.Fatalf("rotate: %+v %v", r, err)
	}
}

// sealed is how many notes are sealed before the tail (the others are
// plaintext until the tail's job).
const sealed = 500

// before gives the users their keys and seals the first notes.
func (s *service) before(t *testing.T) {
	t.Helper()
	for id := int64(1); id <= sealed; id++ {
		ct, err := s.col.SealString(field.RowInt(id), fmt.Sprint("note ", id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(`UPDATE notes SET body = $1 WHERE id = $2`, ct, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range users {
		if _, err := s.users.SealingKey(fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// unreadable counts the values of notes.body that fail to open
// (plaintext is not counted: the census names it).
func (s *service) unreadable(t *testing.T) int {
	t.Helper()
	rows, err := s.db.Query(`SELECT id, body FROM notes`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	bad := 0
	for rows.Next() {
		var id int64
		var body string
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		ct, err := field.ParseCiphertext([]byte(body))
		if err != nil {
			continue // plaintext: the census names the column
		}
		if _, err := s.col.Open(field.RowInt(id), ct); err != nil {
			bad++
		}
	}
	return bad
}

// openForgotten counts forgotten users whose keys still open.
func (s *service) openForgotten(t *testing.T) int {
	t.Helper()
	n := 0
	for i := range forgotten {
		if _, err := s.users.SealingKey(fmt.Sprint("u", i)); err == nil {
			n++
		}
	}
	return n
}

// TestLossyFailover: asynchronous replication; the standby stops
// receiving, the primary runs a re-encryption, five forgets and a fleet
// rotation, then crashes, and the standby is promoted. On it the ledger is
// behind its anchor and every check refuses; the forgotten users' keys are
// back and the column is plaintext again. The recovery re-applies the
// five forgets from the journal and names the column; afterwards the
// service starts, 0 forgotten users open, 0 values are unreadable, and
// the census says the column must be re-run, which then finishes it.
func TestLossyFailover(t *testing.T) {
	pr := startPair(t, false)
	ctx := context.Background()
	s := newService(t, pr.pdb, t.TempDir())
	s.before(t)
	s.join(t)
	s.tail(t, func() { pr.detach(t) })
	pr.failover(t)

	s.member.Leave(ctx)
	s.use(t, pr.sdb)
	if err := s.lg.Check(ctx, s.kr); !errors.Is(err, ledger.ErrReplayed) {
		t.Fatalf("after the failover: %v", err)
	}
	if n := s.unreadable(t); n != 0 {
		t.Fatalf("%d values unreadable after the failover", n)
	}
	// The forgotten users' keys are back (the tail is lost); the store
	// seals nothing for anyone until the recovery, since it cannot verify
	// the ledger.
	var back int
	s.db.QueryRow(`SELECT COUNT(DISTINCT subject) FROM ward_subject_keys WHERE subject IN ('u0', 'u1', 'u2', 'u3', 'u4')`).Scan(&back)
	if back != forgotten {
		t.Fatalf("%d of %d forgotten users' keys are back after the failover, want all (the tail is lost)", back, forgotten)
	}
	if _, err := s.users.SealingKey("u7"); !errors.Is(err, ledger.ErrReplayed) {
		t.Fatalf("a seal before the recovery: %v", err)
	}
	// The part of the job the standby received stays sealed (and opens);
	// the rest is plaintext again.
	after := s.census(t)
	if after.Plaintext == 0 || after.Plaintext >= 2000-sealed {
		t.Fatalf("census after the failover: %+v", after)
	}
	var plan lifecycle.RecoveryPlan
	r, err := lifecycle.Recover(ctx, s.kr, lifecycle.Database{Name: "new primary", DB: s.db, Dialect: field.Postgres, Ledger: s.lg},
		lifecycle.RecoverOptions{Journals: []string{s.journal}, Confirm: func(p lifecycle.RecoveryPlan) bool { plan = p; return true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovery: %d ledger writes lost; %+v; recheck %v; %d values plaintext again", plan.Behind.Writes, plan.Namespaces, plan.Recheck, after.Plaintext)
	if r.Reapplied != forgotten || !slices.Equal(plan.Recheck, []string{"notes.body"}) || plan.Lost() != 0 || plan.JobLocks != 1 ||
		plan.Namespaces[0].Settlement != (forgetlog.Settlement{ByIdentity: true, Committed: forgotten}) { // every lost forget on the anchor's tally
		t.Fatalf("recovered %d; plan %+v", r.Reapplied, plan)
	}
	s.use(t, pr.sdb) // a process starting after the recovery
	if err := s.lg.Check(ctx, s.kr); err != nil {
		t.Fatalf("after the recovery: %v", err)
	}
	s.join(t)
	if n := s.openForgotten(t); n != 0 {
		t.Fatalf("%d forgotten users open after the recovery", n)
	}
	if n := s.unreadable(t); n != 0 {
		t.Fatalf("%d values unreadable after the recovery", n)
	}
	if c := s.census(t); c.Done() {
		t.Fatalf("the census says the column is done: %+v", c)
	}
	if st := s.encrypt(t); st.Plaintext != after.Plaintext {
		t.Fatalf("re-running the job: %+v, census had %d plaintext", st, after.Plaintext)
	}
	if c := s.census(t); !c.Done() {
		t.Fatalf("census after the re-run: %+v", c)
	}
	if err := s.lg.Rechecked(ctx, s.kr, "notes.body"); err != nil {
		t.Fatal(err)
	}
}

// TestSynchronousFailover: the same failover with a synchronous standby
// (and synchronous_commit = local for the application's own writes)
// needs no recovery and loses nothing ward acknowledged: the ledger
// checks, the forgets hold, every value opens.
func TestSynchronousFailover(t *testing.T) {
	pr := startPair(t, true)
	ctx := context.Background()
	s := newService(t, pr.pdb, t.TempDir())
	s.before(t)
	s.join(t)
	s.tail(t, nil)
	pr.failover(t)

	s.member.Leave(ctx)
	s.use(t, pr.sdb)
	if err := s.lg.Check(ctx, s.kr); err != nil {
		t.Fatalf("after a synchronous failover: %v", err)
	}
	if n := s.openForgotten(t); n != 0 {
		t.Fatalf("%d forgotten users open after a synchronous failover", n)
	}
	if n := s.unreadable(t); n != 0 {
		t.Fatalf("%d values unreadable", n)
	}
	r, err := lifecycle.Recover(ctx, s.kr, lifecycle.Database{Name: "new primary", DB: s.db, Dialect: field.Postgres, Ledger: s.lg}, lifecycle.RecoverOptions{Journals: []string{s.journal}})
	if err != nil || r.Plan.NeedsRecovery() {
		t.Fatalf("recovery after a synchronous failover: %+v %v", r.Plan, err)
	}
}

// TestDurableWaitsForTheStandby: with a synchronous standby whose replay
// is paused, an application's write commits (synchronous_commit = local)
// while a forget waits, and finishes once the standby applies it: ward's
// own transactions ask for remote_apply.
func TestDurableWaitsForTheStandby(t *testing.T) {
	pr := startPair(t, true)
	ctx := context.Background()
	s := newService(t, pr.pdb, t.TempDir())
	s.before(t)
	pr.caughtUp(t)
	pr.exec(t, pr.sdb, `SELECT pg_wal_replay_pause()`)
	if _, err := s.db.Exec(`UPDATE notes SET body = 'app write' WHERE id = 2000`); err != nil {
		t.Fatalf("an application write with replay paused: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.users.Forget(ctx, "u0") }()
	select {
	case err := <-done:
		t.Fatalf("a forget finished while the synchronous standby could not apply it: %v", err)
	case <-time.After(time.Second):
	}
	pr.exec(t, pr.sdb, `SELECT pg_wal_replay_resume()`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var gone bool
	if err := pr.sdb.QueryRow(`SELECT count(*) = 1 FROM ward_subject_tombstones WHERE subject = 'u0'`).Scan(&gone); err != nil || !gone {
		t.Fatalf("the standby lacks the acknowledged forget: %v %v", gone, err)
	}
}

// TestInterruptedForget: with the synchronous standby down, a forget's
// commit waits; the wait is noticed (sqltable.WithCommitNotice, which the
// CLI prints), and once the caller stops waiting the forget fails with
// subject.ErrCommitUnknown — "may have been applied" — and indeed the
// primary committed it: its tombstone is there. (It failed with a bare
// "context deadline exceeded", which reads as "nothing happened".)
func TestInterruptedForget(t *testing.T) {
	pr := startPair(t, true)
	s := newService(t, pr.pdb, t.TempDir())
	s.before(t)
	pr.caughtUp(t)
	if err := pr.standby.Stop(); err != nil {
		t.Fatal(err)
	}
	// The forget is stopped once its commit has waited 200 ms for the
	// standby (the commit notice), not at a fixed time: on a loaded
	// machine the steps before the commit can take seconds, and a
	// context that ends before the commit is sent rolls the forget back.
	var noticed atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang, not a timing
	defer cancel()
	ctx = sqltable.WithCommitNotice(ctx, 200*time.Millisecond, func(time.Duration) { noticed.Store(true); cancel() })
	ferr := s.users.Forget(ctx, "u1")
	if !errors.Is(ferr, subject.ErrCommitUnknown) || !noticed.Load() {
		t.Fatalf("a forget waiting for a synchronous standby that is down: %v (noticed: %v)", ferr, noticed.Load())
	}
	// The commit is local on the primary, but other sessions see it only
	// once the backend has taken the cancellation and stopped waiting for
	// the standby, which pgx sends on its own connection without waiting
	// for it: under load the query below can come first, so it polls.
	var tombstones int
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		err = pr.pdb.QueryRow(`SELECT count(*) FROM ward_subject_tombstones WHERE subject = 'u1'`).Scan(&tombstones)
		if err != nil || tombstones == 1 {
			break
		}
	}
	if err != nil || tombstones != 1 {
		t.Fatalf("the primary's tombstones of the interrupted forget: %d %v (the forget said: %v)", tombstones, err, ferr)
	}
}
