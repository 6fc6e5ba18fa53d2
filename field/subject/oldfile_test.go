package subject

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// keyringCopy copies the keyring file as it is now (a backup, a copy left
// on an old host) and returns what loads the copy later, once the live
// file has moved on.
func (e *env) keyringCopy(t *testing.T) func() *keyring.Keyring {
	t.Helper()
	b, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	return func() *keyring.Keyring {
		t.Helper()
		kr, err := keyring.Unmarshal(context.Background(), b, e.mk)
		if err != nil {
			t.Fatal(err)
		}
		return kr
	}
}

// rotateAndRetire rotates e's keyring as a fleet rotation does (add,
// record, promote), moves the store's keys and tombstones (Rewrap), and
// retires the old key (recorded, then removed): the old key's integrity
// epoch ends.
func rotateAndRetire(t *testing.T, e *env, s *Store) keyring.KeyID {
	t.Helper()
	ctx := context.Background()
	old := e.kr.Primary().ID
	m := keyring.NewManager(e.kr)
	id, err := m.Add(ctx, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ledger.Record(ctx, e.kr, id); err != nil {
		t.Fatal(err)
	}
	if err := m.Promote(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := s.Reseal(ctx, ResealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Tombstones.Invalid != 0 || !st.Tombstones.Marked {
		t.Fatalf("the tombstones' move: %+v", st.Tombstones)
	}
	if n, err := s.TombstonesAt(ctx, old); err != nil || n != 0 {
		t.Fatalf("tombstones left under the old epoch: %d, %v", n, err)
	}
	if err := e.ledger.Retire(ctx, e.kr, old); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, old); err != nil {
		t.Fatal(err)
	}
	return old
}

// plantTombstone writes a tombstone row as a database writer would.
func plantTombstone(t *testing.T, e *env, table, subject string, at, epoch int64, mac string) {
	t.Helper()
	if _, err := e.db.Exec(e.d.Rebind(fmt.Sprintf(`INSERT INTO %s (namespace, subject, forgotten_at, epoch, mac) VALUES ('users', ?, ?, ?, ?)`, table)),
		subject, at, epoch, mac); err != nil {
		t.Fatal(err)
	}
}

// TestTombstonesAgainstOldKeyringFiles: the holder of a keyring file the
// service used before three rotations (and the removal of the first key)
// plants tombstones for a live user — v1 under the file's state key, v2
// under the old primary's integrity epoch. None counts: the user is not
// forgotten, nothing of theirs would be deleted, and the audit names the
// forgeries; the real forget, made before, still stands (moved by each
// rotation's re-wrap).
func TestTombstonesAgainstOldKeyringFiles(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "alice's secret")
		e.insert(t, c, 2, "bob", "bob's secret")
		oldFile := e.keyringCopy(t)
		if err := s.Forget(ctx, "carol"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			rotateAndRetire(t, e, s)
		}
		old := oldFile()
		db, err := s.databaseID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Unix()
		// v1, under the old file's state key (a state MAC verifies at
		// every epoch the keyring keeps).
		epoch1, mac1 := core(old).StateMAC(s.tombstoneMessage("alice", at))
		plantTombstone(t, e, e.tombs, "alice", at, int64(epoch1), hex.EncodeToString(mac1))
		// v2, under the old file's primary: an epoch that ended.
		epoch2, key, err := core(old).IntegrityKey(tombstonePurpose)
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, key)
		m.Write(s.tombstoneMessageV2(db, "bob", at))
		plantTombstone(t, e, e.tombs, "bob", at, int64(epoch2), tombstoneV2+hex.EncodeToString(m.Sum(nil)))

		fresh := e.store(t, time.Nanosecond)
		for _, u := range []string{"alice", "bob"} {
			if ok, err := fresh.IsForgotten(ctx, u); err != nil || ok {
				t.Fatalf("%s after a tombstone planted with an old keyring file: forgotten %v, %v", u, ok, err)
			}
		}
		if ok, err := fresh.IsForgotten(ctx, "carol"); err != nil || !ok {
			t.Fatalf("carol's real forget after three rotations and retirements: %v, %v", ok, err)
		}
		valid, bad, err := fresh.Tombstoned(ctx)
		if err != nil || len(valid) != 1 || len(bad) != 2 {
			t.Fatalf("tombstones: valid %v, bad %v, %v", valid, bad, err)
		}
		if _, _, err := fresh.Audit(ctx); !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("the audit of planted tombstones: %v, want ErrTombstoneTampered", err)
		}
	})
}

// TestTombstoneCopiedFromAnotherDatabase: two databases under one keyring
// (the second adopted), a user forgotten in the first; the tombstone row
// copied into the second, where the same user ID is live, does not verify
// there — it is bound to its database.
func TestTombstoneCopiedFromAnotherDatabase(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		if err := s.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		other := &ledger.Ledger{DB: e.db, Dialect: e.d, Table: e.ledger.Table + "_other"}
		if _, err := other.Adopt(ctx, e.kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(ctx, Config{DB: e.db, Dialect: e.d, Keyring: e.kr, Ledger: other, Namespace: "users", TTL: time.Nanosecond,
			KeysTable: e.keys + "_other", TombstonesTable: e.tombs + "_other", SessionsTable: "sessions_other"})
		if err != nil {
			t.Fatal(err)
		}
		var at, epoch int64
		var mac string
		if err := e.db.QueryRow(`SELECT forgotten_at, epoch, mac FROM `+e.tombs+` WHERE subject = 'alice'`).Scan(&at, &epoch, &mac); err != nil {
			t.Fatal(err)
		}
		plantTombstone(t, e, e.tombs+"_other", "alice", at, epoch, mac)
		if ok, err := s2.IsForgotten(ctx, "alice"); err != nil || ok {
			t.Fatalf("a tombstone copied from another database: forgotten %v, %v", ok, err)
		}
		if ok, err := s.IsForgotten(ctx, "alice"); err != nil || !ok {
			t.Fatalf("the tombstone in its own database: %v, %v", ok, err)
		}
	})
}

// TestTombstonesUpgradeInPlace: tombstones an earlier release wrote (v1,
// bound to no database) keep counting after the upgrade, until a rotation's
// re-wrap moves them to v2; from then on a v1 tombstone is refused.
func TestTombstonesUpgradeInPlace(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		at := time.Now().Unix()
		for _, u := range []string{"dora", "emil"} { // as the release before wrote them
			epoch, mac := core(e.kr).StateMAC(s.tombstoneMessage(u, at))
			plantTombstone(t, e, e.tombs, u, at, int64(epoch), hex.EncodeToString(mac))
		}
		for _, u := range []string{"dora", "emil"} {
			if ok, err := s.IsForgotten(ctx, u); err != nil || !ok {
				t.Fatalf("%s's v1 tombstone after the upgrade: %v, %v", u, ok, err)
			}
		}
		rotateAndRetire(t, e, s)
		fresh := e.store(t, time.Nanosecond)
		for _, u := range []string{"dora", "emil"} {
			if ok, err := fresh.IsForgotten(ctx, u); err != nil || !ok {
				t.Fatalf("%s after the rotation moved the tombstones: %v, %v", u, ok, err)
			}
		}
		var v2 int
		if err := e.db.QueryRow(`SELECT COUNT(*) FROM ` + e.tombs + ` WHERE mac LIKE 'v2:%'`).Scan(&v2); err != nil || v2 != 2 {
			t.Fatalf("%d v2 tombstones after the move, %v", v2, err)
		}
		epoch, mac := core(e.kr).StateMAC(s.tombstoneMessage("frank", at))
		plantTombstone(t, e, e.tombs, "frank", at, int64(epoch), hex.EncodeToString(mac))
		if ok, err := fresh.IsForgotten(ctx, "frank"); err != nil || ok {
			t.Fatalf("a v1 tombstone after the move (even under the current state key): forgotten %v, %v", ok, err)
		}
	})
}
