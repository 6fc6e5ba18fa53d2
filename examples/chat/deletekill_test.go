package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/killtest"
	"github.com/wardlab/ward/kms/local"
)

// deleteChildEnv makes the test binary run TestDeleteChild's loop.
const deleteChildEnv = "WARD_DELETE_CHILD"

// TestAccountDeletionKilled: a process deletes accounts one after
// another and is killed with SIGKILL at random moments (12 kills, after
// progress); after every kill each account is either whole (its row, its
// key, no tombstone) or deleted (no row, a tombstone that verifies): never
// a zombie that logs in but is forgotten, nor a deleted account whose key
// stays. A last run finishes, and the sweep leaves no row of a deleted
// user.
func TestAccountDeletionKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		mk := local.Generate()
		cfg := Config{DB: url, KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: mk, Limits: testLimits}
		ta := newTestApp(t, cfg)
		const n = 16
		var ids []int64
		for i := range n {
			email := fmt.Sprintf("user%d@example.com", i)
			ta.client(t).signup(email)
			ids = append(ids, userID(t, ta, email))
		}
		for kill := range 12 {
			killtest.KillAfter(t, "TestDeleteChild", "account deletion", 30*time.Millisecond, deleteChildEnv+"=1", local.EnvVar+"="+mk.Encode(),
				"CHILD_DB="+url, "CHILD_KEYRING="+cfg.KeyringPath, "CHILD_IDS="+strings.Trim(fmt.Sprint(ids), "[]"))
			checkAccounts(t, ctx, ta, ids, kill)
		}
		for _, id := range ids { // the last run, to the end
			if err := ta.app.store.deleteAccountIfAny(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		checkAccounts(t, ctx, ta, ids, 12)
		if _, err := ta.app.SweepSessions(ctx); err != nil {
			t.Fatal(err)
		}
		var left int
		ta.db.QueryRow(`SELECT COUNT(*) FROM conversations`).Scan(&left)
		if left != 0 {
			t.Fatalf("%d conversations of deleted users after the sweep", left)
		}
	})
}

// checkAccounts states that every account is whole or deleted.
func checkAccounts(t *testing.T, ctx context.Context, ta *testApp, ids []int64, kill int) {
	t.Helper()
	deleted := 0
	for _, id := range ids {
		var row int
		ta.db.QueryRow(ta.app.store.q(`SELECT COUNT(*) FROM users WHERE id = ?`), id).Scan(&row)
		gone, err := ta.app.store.subjects.IsForgotten(ctx, subjectOf(id))
		if err != nil {
			t.Fatal(err)
		}
		var keys int
		ta.db.QueryRow(ta.app.store.q(`SELECT COUNT(*) FROM `+subject.DefaultKeysTable+` WHERE subject = ?`), subjectOf(id)).Scan(&keys)
		switch {
		case row == 1 && !gone:
		case row == 0 && gone && keys == 0:
			deleted++
		default:
			t.Fatalf("kill %d: user %d half deleted: account row %d, forgotten %v, key rows %d", kill, id, row, gone, keys)
		}
	}
	t.Logf("kill %d: %d of %d deleted", kill, deleted, len(ids))
}

// deleteAccountIfAny deletes an account unless it is gone already (a run
// after a kill).
func (s *store) deleteAccountIfAny(ctx context.Context, user int64) error {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE id = ?`), user).Scan(&n); err != nil || n == 0 {
		return err
	}
	return s.deleteAccount(ctx, user)
}

// TestDeleteChild is the child of TestAccountDeletionKilled.
func TestDeleteChild(t *testing.T) {
	if os.Getenv(deleteChildEnv) == "" {
		t.Skip("run by TestAccountDeletionKilled")
	}
	ctx := context.Background()
	mk, err := local.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := Open(ctx, Config{DB: os.Getenv("CHILD_DB"), KeyringPath: os.Getenv("CHILD_KEYRING"), KeyService: mk})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(os.Getenv("CHILD_IDS")) {
		id, _ := strconv.ParseInt(f, 10, 64)
		if err := app.store.deleteAccountIfAny(ctx, id); err != nil {
			t.Fatal(err)
		}
		killtest.Progressed()
	}
	select {}
}
