package chat

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lifecycle"
)

// TestOldKeyringFileForgesNoSession: the holder of a keyring file the
// service used before a rotation (a former operator, a stolen backup)
// and write access to the database plants session rows for alice, one
// under the MAC of the release before (v1, keyed by the keyring's root,
// which every copy of the file derives) and one under the old file's
// integrity epoch (v2). Once a rotation has moved every row MAC and the
// old key is retired, neither logs anyone in; alice's own session and
// password still work.
func TestOldKeyringFileForgesNoSession(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		alice := ta.client(t)
		alice.signup("alice@example.com")
		aliceID := mustUser(t, ta.app, "alice@example.com")
		oldFile, err := os.ReadFile(ta.cfg.KeyringPath)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ta.app.ledger.Verified(ctx, ta.app.kr)
		if err != nil {
			t.Fatal(err)
		}
		oldID := ta.app.kr.Primary().ID
		if err := ta.app.Rotate(ctx, os.Stderr); err != nil {
			t.Fatal(err)
		}
		// v1 MACs are refused once the fleet has written v2 for 10 s and a
		// pass finds none left: the next re-seal's pass records it.
		time.Sleep(11 * time.Second)
		if err := ta.app.Reload(ctx, os.Stderr); err != nil {
			t.Fatal(err)
		}
		if _, err := lifecycle.Retire(ctx, ta.app.kr, []lifecycle.Database{ta.app.database()}, oldID); err != nil {
			t.Fatalf("retiring the old key: %v", err)
		}
		old, err := keyring.Unmarshal(ctx, oldFile, ta.cfg.KeyService)
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1019 the release before's row MAC, as a forger computes it
		v1, _ := field.NewRowMAC(old, sessionMACs.Table, sessionMACs.Covers...)
		v2, _ := field.NewRowMACFor(old, sessionMACs.Table, sessionMACs.Covers, field.RowMACOptions{Database: st.Database})
		exp := time.Now().Add(time.Hour).Unix()
		for token, mac := range map[string]*field.RowMAC{"forged-v1": v1, "forged-v2": v2} {
			tag, err := mac.Sum(tokenHash(token), aliceID, exp)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ta.db.Exec(ta.app.store.q(`INSERT INTO sessions (token_hash, user_id, expires, mac) VALUES (?, ?, ?, ?)`), tokenHash(token), aliceID, exp, tag); err != nil {
				t.Fatal(err)
			}
		}
		fresh, err := Open(ctx, ta.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		for _, svc := range []*Service{ta.app, fresh} {
			for _, token := range []string{"forged-v1", "forged-v2"} {
				if u, err := svc.store.sessionUser(ctx, token); err == nil {
					t.Fatalf("a session planted with the old keyring file (%s) logs in as user %d", token, u)
				}
			}
		}
		if code := alice.do("GET", "/api/conversations", nil, nil); code != 200 {
			t.Fatalf("alice's own session after the rotation and retirement: %d", code)
		}
		again := ta.client(t)
		if code := again.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("alice logs in after the rotation and retirement: %d", code)
		}
	})
}

// indexHolds counts the users rows whose blind index, in either column,
// is one of vals.
func indexHolds(t *testing.T, s *Service, vals ...[]byte) int {
	t.Helper()
	n := 0
	for _, v := range vals {
		var c int
		if err := s.db.QueryRow(s.store.q(`SELECT COUNT(*) FROM users WHERE email_idx = ? OR email_idx2 = ?`), v, v).Scan(&c); err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// oldIndexes are the blind indexes of email a holder of the keyring file
// old computes: the release before's (v1, from the keyring's root) and
// v2 under the file's primary key's epoch.
func oldIndexes(t *testing.T, old *keyring.Keyring, database, email string) [][]byte {
	t.Helper()
	v1, err := field.NewBlindIndex(old, "users", "email", field.WithNormalizer(field.NormalizeFold))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := field.NewIndex(old, "users", "email", field.IndexOptions{Database: database, Name: "email", Normalizer: field.Fold, Epoch: old.Primary().ID})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{v1.Compute(email), v2.Compute(email)}
}

// TestOldKeyringFileTestsNoGuess: the holder of a keyring file the
// service used before a rotation, reading the database, computes the
// blind index of a guessed address and finds its account — until the
// rotation, which re-keys the users' index to the new epoch with the
// service running (Rotate: lifecycle.Reindex). After it neither the
// release before's index (v1) nor the old epoch's matches a row, the old
// column is empty, the old key retires, and alice logs in and a new user
// signs up as before.
func TestOldKeyringFileTestsNoGuess(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		ta.client(t).signup("alice@example.com")
		oldFile, err := os.ReadFile(ta.cfg.KeyringPath)
		if err != nil {
			t.Fatal(err)
		}
		old, err := keyring.Unmarshal(ctx, oldFile, ta.cfg.KeyService)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ta.app.ledger.Verified(ctx, ta.app.kr)
		if err != nil {
			t.Fatal(err)
		}
		guesses := oldIndexes(t, old, st.Database, "Alice@Example.com")
		if n := indexHolds(t, ta.app, guesses[1]); n != 1 {
			t.Fatalf("before the rotation the old file's v2 index matches %d rows, want alice's", n)
		}
		var out strings.Builder
		if err := ta.app.Rotate(ctx, &out); err != nil || !strings.Contains(out.String(), "blind index of users.email moved to epoch") {
			t.Fatalf("rotate: %v\n%s", err, out.String())
		}
		if n := indexHolds(t, ta.app, guesses...); n != 0 {
			t.Fatalf("after the rotation the old file's indexes match %d rows", n)
		}
		var left int
		if err := ta.db.QueryRow(`SELECT COUNT(*) FROM users WHERE email_idx IS NOT NULL`).Scan(&left); err != nil || left != 0 {
			t.Fatalf("the old column holds %d values (%v)", left, err)
		}
		if _, err := lifecycle.Retire(ctx, ta.app.kr, []lifecycle.Database{ta.app.database()}, old.Primary().ID); err != nil {
			t.Fatalf("retiring the old key: %v", err)
		}
		if code := ta.client(t).do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("alice logs in after the re-key: %d", code)
		}
		ta.client(t).signup("bob@example.com")
		mustUser(t, ta.app, "BOB@example.com")
	})
}

// TestEmailIndexFromTheReleaseBefore: a database of the release before
// (testdata/v1-db, its users' index computed from the keyring's root,
// which every copy of the file derives) keeps logging its users in after
// the upgrade — the index is recorded as v1 — and the first rotation moves
// it to v2 under the new epoch: the root's index then matches no row.
func TestEmailIndexFromTheReleaseBefore(t *testing.T) {
	ctx := context.Background()
	cfg := v1Database(t)
	cfg.AllowUnpepperedHashes, cfg.KeyringPoll = true, 100*time.Millisecond
	if err := Migrate(ctx, cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.ledger.Verified(ctx, s.kr)
	if err != nil {
		t.Fatal(err)
	}
	v1 := oldIndexes(t, s.kr, st.Database, "alice@example.com")[0]
	if rec := s.store.emails.Record(); rec.Epoch != 0 || indexHolds(t, s, v1) != 1 {
		t.Fatalf("after the upgrade: the index is recorded %+v, and the root's index of alice matches %d rows", rec, indexHolds(t, s, v1))
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	login := func() {
		t.Helper()
		if code := (&testApp{ts: ts}).client(t).do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("alice's log-in: %d", code)
		}
	}
	login()
	var out strings.Builder
	if err := s.Rotate(ctx, &out); err != nil {
		t.Fatalf("rotate: %v\n%s", err, out.String())
	}
	if rec := s.store.emails.Record(); rec.Epoch != s.kr.Primary().ID || indexHolds(t, s, v1) != 0 {
		t.Fatalf("after the rotation: the index is recorded %+v, and the root's index of alice matches %d rows", rec, indexHolds(t, s, v1))
	}
	login()
}

// TestLimitsOutliveTheIndexRekey: the log-in limit counts an address's
// failures under a key of its own, not under its blind index, so the
// rotation that re-keys the index to a new epoch gives a guesser no fresh
// attempts: after five failures alice's account stays limited across it.
// Her own browser's device token, signed before the rotation, still lets
// her in past the guesser's failures.
func TestLimitsOutliveTheIndexRekey(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 60, SignupPerHour: 100, SignupsPerMinute: 100}}
	ta := newTestApp(t, cfg)
	alice := ta.client(t)
	alice.signup("alice@example.com") // her browser gets a device token
	eve := ta.client(t)
	for range 5 {
		if code := eve.do("POST", "/api/login", credentials{"alice@example.com", "wrong"}, nil); code != 401 {
			t.Fatalf("a guess: %d", code)
		}
	}
	var out strings.Builder
	if err := ta.app.Rotate(context.Background(), &out); err != nil || !strings.Contains(out.String(), "blind index of users.email moved to epoch") {
		t.Fatalf("rotate: %v\n%s", err, out.String())
	}
	if code := eve.do("POST", "/api/login", credentials{"Alice@Example.com", "wrong"}, nil); code != 429 {
		t.Fatalf("a guess after the index moved to a new epoch: %d, want 429", code)
	}
	if code := alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("alice's browser, its device token signed before the rotation: %d, want 200", code)
	}
}
