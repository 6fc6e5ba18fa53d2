package subject

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
)

// TestPrivateSurvivesWriter: with a journal, a database writer who
// deletes a private user's key and session rows, or puts back their rows
// from before they went private, does not turn them ordinary: Private
// still says so (in another process too) and no keyring-wrapped key is
// created or used for a write. Without a journal the deletion does turn
// them ordinary (the documented limit).
func TestPrivateSurvivesWriter(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := newHasher(t)
		j, err := forgetlog.Open(filepath.Join(t.TempDir(), "journal"), e.kr)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		open := func(j *forgetlog.Journal) *Store {
			s, err := Open(ctx, Config{DB: e.db, Dialect: e.d, Keyring: e.kr, Ledger: e.ledger, Namespace: "users",
				TTL: time.Nanosecond, KeysTable: e.keys, TombstonesTable: e.tombs, Journal: j})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		a := open(j)
		c := e.column(t, a)
		e.insert(t, c, 1, "alice", "before private")
		e.insert(t, c, 2, "carol", "carol's")
		before := e.backup(t, e.keys)
		for _, sub := range []string{"alice", "carol"} {
			_, secret, err := h.HashWithKey(ctx, []byte(sub+" pw"))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.MakePrivate(ctx, sub, secret, PrivateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// alice: her rows deleted. carol: her rows from before put back.
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = 'alice'`, e.keys))
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = 'carol'`, e.keys))
		e.restoreRows(t, before, e.keys, "carol")
		other := open(j2(t, j, e)) // another process, its own journal handle
		for _, s := range []*Store{a, other} {
			for _, sub := range []string{"alice", "carol"} {
				if p, err := s.Private(ctx, sub); err != nil || !p {
					t.Fatalf("%s after the writer: private %v, %v", sub, p, err)
				}
				if _, err := s.SealingKey(sub); !errors.Is(err, ErrPrivateKeysChanged) || !errors.Is(err, field.ErrSubjectLocked) {
					t.Fatalf("%s's next write after the writer: %v", sub, err)
				}
			}
		}
		var keyringWrapped int
		e.db.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE subject = 'alice'`, e.keys)).Scan(&keyringWrapped)
		if keyringWrapped != 0 {
			t.Fatalf("a key was created for alice: %d rows", keyringWrapped)
		}
		// Without a journal, the same deletion downgrades (stated in
		// SECURITY.md): the store has nothing outside the database.
		plain := open(nil)
		if p, _ := plain.Private(ctx, "alice"); p {
			t.Fatal("without a journal, privacy survived the deletion: the test does not show the limit")
		}
	})
}

// j2 opens a second handle on the same journal folder.
func j2(t *testing.T, j *forgetlog.Journal, e *env) *forgetlog.Journal {
	t.Helper()
	o, err := forgetlog.Open(j.Dir(), e.kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// restoreRows puts back a backup's rows of one subject (the second
// column of the key table; MySQL's driver reads it as bytes), and fails
// if the backup holds none.
func (e *env) restoreRows(t *testing.T, b backup, table, subject string) {
	t.Helper()
	n := 0
	for _, vals := range b[table] {
		sub := vals[1]
		if bs, ok := sub.([]byte); ok {
			sub = string(bs)
		}
		if fmt.Sprint(sub) != subject {
			continue
		}
		n++
		ph := ""
		for i := range vals {
			if i > 0 {
				ph += ", "
			}
			ph += e.d.Placeholder(i + 1)
		}
		if _, err := e.db.Exec(fmt.Sprintf(`INSERT INTO %s VALUES (%s)`, table, ph), vals...); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatalf("restoreRows: no row of %s in the backup of %s", subject, table)
	}
}

// TestPrivateFreshVersion: going private starts a fresh key version that
// was never keyring-wrapped; what is written afterwards is sealed under
// it, so the database's key rows from a backup taken before, opened with
// the keyring, open the values from before (the stated window) but none
// written after.
func TestPrivateFreshVersion(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := newHasher(t)
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "before private")
		backup := e.backup(t, e.keys)
		_, secret, err := h.HashWithKey(ctx, []byte("alice pw"))
		if err != nil {
			t.Fatal(err)
		}
		u, _, err := s.MakePrivate(ctx, "alice", secret, PrivateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.insert(t, c.WithKeys(u), 2, "alice", "after private")
		if got, err := e.read(t, c.WithKeys(u), 2); err != nil || got != "after private" {
			t.Fatalf("alice's new value with her keys: %q %v", got, err)
		}
		// The operator restores the key rows from the backup and opens
		// with the keyring.
		e.restore(t, backup, e.keys)
		op := e.store(t, time.Nanosecond)
		oc := e.column(t, op)
		if got, err := e.read(t, oc, 1); err != nil || got != "before private" {
			t.Fatalf("the value from before, with the backup's rows: %q %v", got, err)
		}
		if got, err := e.read(t, oc, 2); err == nil {
			t.Fatalf("a value written after going private opened with the backup's rows: %q", got)
		}
	})
}
