package chat

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
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
