package subject

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/keyring"
)

// journaledStore opens a store with its own handle on the journal in dir,
// as one process of a fleet would.
func (e *env) journaledStore(t *testing.T, dir string, kr *keyring.Keyring) *Store {
	t.Helper()
	j, err := forgetlog.Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	s, err := Open(context.Background(), Config{DB: e.db, Dialect: e.d, Keyring: kr, Ledger: e.ledger, Namespace: "users",
		TTL: time.Nanosecond, KeysTable: e.keys, TombstonesTable: e.tombs, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// plantPrivate appends, with the keyring (file) kr, private records of
// subject as its holder could: v1 (the root's MAC key) and v2 chained
// from the ledger's tally as the database shows it, under kr's epoch.
func (e *env) plantPrivate(t *testing.T, dir string, kr *keyring.Keyring, db, subject string) {
	t.Helper()
	ctx := context.Background()
	j, err := forgetlog.Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	st, err := e.ledger.Verified(ctx, e.kr) // what a database reader sees
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range []forgetlog.Entry{{Database: db, Namespace: "users", Subject: subject, Private: true},
		{Database: db, Namespace: "users", Subject: subject, Private: true, Chain: true, Prev: st.Tally(PrivateCounter("users"))}} {
		if err := j.Append(ctx, entry); err != nil {
			t.Fatal(err)
		}
	}
}

// mustBeOrdinary checks that a subject is not private and gets a
// keyring-wrapped key at its next write.
func mustBeOrdinary(t *testing.T, s *Store, subject string) {
	t.Helper()
	if p, err := s.Private(context.Background(), subject); err != nil || p {
		t.Fatalf("%s: private %v, %v: a planted record counted", subject, p, err)
	}
	if _, err := s.SealingKey(subject); err != nil {
		t.Fatalf("%s's next write: %v", subject, err)
	}
}

// TestPrivateRecordsAgainstOldKeyringFiles: the holder of a keyring file
// the service used before a rotation (its key then retired) who can write
// the journal folder plants records that bob went private — v1 under the
// root's MAC key, v2 under the file's epoch chained from the ledger's
// tally. Neither counts: bob stays an ordinary user and gets a
// keyring-wrapped key. alice, who really went private before the
// rotation, stays private through it and the retire (her record's epoch
// ended; the ledger's tally proves it), with her key rows deleted by a
// database writer.
func TestPrivateRecordsAgainstOldKeyringFiles(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "journal")
		s := e.journaledStore(t, dir, e.kr)
		h := newHasher(t)
		_, secret, err := h.HashWithKey(ctx, []byte("alice pw"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.MakePrivate(ctx, "alice", secret, PrivateOptions{}); err != nil {
			t.Fatal(err)
		}
		oldFile := e.keyringCopy(t)
		rotateAndRetire(t, e, s)
		old := oldFile()
		db, err := s.databaseID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.plantPrivate(t, dir, old, db, "bob")
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = 'alice'`, e.keys))
		fresh := e.journaledStore(t, dir, e.kr)
		for _, st := range []*Store{s, fresh} {
			if p, err := st.Private(ctx, "alice"); err != nil || !p {
				t.Fatalf("alice after the rotation, the retire and the writer: private %v, %v", p, err)
			}
			if _, err := st.SealingKey("alice"); !errors.Is(err, ErrPrivateKeysChanged) {
				t.Fatalf("alice's next write: %v, want ErrPrivateKeysChanged", err)
			}
		}
		mustBeOrdinary(t, fresh, "bob")
	})
}

// TestPrivateRecordsUpgradeInPlace: a journal of the release before holds
// v1 private records (alice's and carol's; alice's key rows since deleted
// by a database writer). The first store opened with the journal moves
// them onto the ledger's chain and marks it; from then on a v1 record
// planted with any copy of the keyring file counts for nothing, while
// alice and carol stay private through a rotation and a retire.
func TestPrivateRecordsUpgradeInPlace(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "journal")
		plain := e.store(t, time.Nanosecond)
		db, err := plain.databaseID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before, err := forgetlog.Open(dir, e.kr) // the release before's records
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range []string{"alice", "carol"} {
			if err := before.Append(ctx, forgetlog.Entry{Database: db, Namespace: "users", Subject: sub, Private: true}); err != nil {
				t.Fatal(err)
			}
		}
		before.Close()
		oldFile := e.keyringCopy(t)
		s := e.journaledStore(t, dir, e.kr)
		st, err := e.ledger.Verified(ctx, e.kr)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(st.Marks, PrivateV2Mark("users")) || st.Tally(PrivateCounter("users")).Count != 2 {
			t.Fatalf("after the first open: marks %v, tally %+v", st.Marks, st.Tally(PrivateCounter("users")))
		}
		again := e.journaledStore(t, dir, e.kr) // a second start moves nothing twice
		if st, _ := e.ledger.Verified(ctx, e.kr); st.Tally(PrivateCounter("users")).Count != 2 {
			t.Fatalf("a second open counted again: %+v", st.Tally(PrivateCounter("users")))
		}
		rotateAndRetire(t, e, s)
		old := oldFile()
		e.plantPrivate(t, dir, old, db, "bob")
		today, err := forgetlog.Open(dir, e.kr) // a v1 record under today's file: its root is every file's
		if err != nil {
			t.Fatal(err)
		}
		if err := today.Append(ctx, forgetlog.Entry{Database: db, Namespace: "users", Subject: "dave", Private: true}); err != nil {
			t.Fatal(err)
		}
		today.Close()
		for _, st := range []*Store{s, again, e.journaledStore(t, dir, e.kr)} {
			for _, sub := range []string{"alice", "carol"} {
				if p, err := st.Private(ctx, sub); err != nil || !p {
					t.Fatalf("%s after the move, the rotation and the retire: private %v, %v", sub, p, err)
				}
			}
			mustBeOrdinary(t, st, "bob")
			mustBeOrdinary(t, st, "dave")
		}
	})
}
