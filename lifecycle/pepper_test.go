package lifecycle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
	"github.com/wardlab/ward/password"
)

// TestRetireWithInactivePepperedUsers: users who never log in again keep
// hashes peppered with the old key; after a forget and a rotation the old
// key still reaches "retired". Afterwards every old hash verifies, no
// material in the keyring file unwraps any subject-key row of a backup
// taken before (the forgotten user's included), and the live users' keys
// open.
func TestRetireWithInactivePepperedUsers(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 5)
		old := a.kr.Primary().ID
		users := d.Table(t, "users")
		if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id VARCHAR(64) PRIMARY KEY, pw TEXT NOT NULL)`, users)); err != nil {
			t.Fatal(err)
		}
		if err := a.db.Ledger.RecordColumns(ctx, a.kr, ledger.Column{Table: users, Column: "pw", Key: "id", Kind: ledger.KindPasswordHash}); err != nil {
			t.Fatal(err)
		}
		h, err := password.NewHasher(password.Policy{Preferred: password.Params{Scheme: password.Argon2id, Memory: 64, Time: 1, Parallelism: 1}, AllowWeak: true, Pepper: a.kr, RequirePepper: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		store, err := subject.Open(ctx, subject.Config{DB: d.DB, Dialect: a.db.Dialect, Keyring: a.kr, Ledger: a.db.Ledger, Namespace: "users", TTL: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		hashes := map[string]string{}
		for i := range n {
			u := fmt.Sprint("u", i)
			if hashes[u], err = h.Hash(ctx, []byte(u+" pw")); err != nil {
				t.Fatal(err)
			}
			if _, err := d.DB.Exec(a.db.Dialect.Rebind(`INSERT INTO `+users+` VALUES (?, ?)`), u, hashes[u]); err != nil {
				t.Fatal(err)
			}
			if _, err := store.SealingKey(u); err != nil {
				t.Fatal(err)
			}
		}
		backup := takeSnapshot(t, d, subject.DefaultKeysTable, subject.DefaultTombstonesTable)
		// The copy stands for a backup outside the database, which the
		// retire is meant to make unreadable: the sweep is told to skip it.
		a.db.Unswept = []string{"bak_" + subject.DefaultKeysTable, "bak_" + subject.DefaultTombstonesTable}
		if err := store.Forget(ctx, "u0"); err != nil {
			t.Fatal(err)
		}
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// Nobody logs in: every hash is still peppered with the old key.
		kept, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old)
		if err != nil || len(kept) != 1 || !kept[0].Kept || !strings.Contains(kept[0].What, fmt.Sprintf("%d password hashes", n)) {
			t.Fatalf("retire with inactive peppered users: %+v %v", kept, err)
		}
		if _, ok := a.kr.Lookup(old); ok {
			t.Fatal("the retired key's material is still in the keyring")
		}
		for u, hash := range hashes {
			if res, err := h.Verify(ctx, []byte(u+" pw"), hash); err != nil || !res.NeedsRehash {
				t.Fatalf("%s's old peppered hash after the retire: %+v %v", u, res, err)
			}
		}
		for i := 1; i < n; i++ {
			if _, err := store.SealingKey(fmt.Sprint("u", i)); err != nil {
				t.Fatalf("u%d's key in the live database: %v", i, err)
			}
		}
		// The backup from before the forget, restored in full: no row of it
		// unwraps with this keyring file, u0's included.
		backup.rollback(t)
		for i := range n {
			if _, err := store.SealingKey(fmt.Sprint("u", i)); err == nil {
				t.Fatalf("u%d's key from the backup unwraps after the retire", i)
			}
		}
	})
}

// TestRetireResumes: a retirement that stopped after recording the key as
// retired in the ledger and before removing it from the keyring file (a
// kill between its two writes) leaves a database that checks, every value
// opening, and running the retirement again finishes it.
func TestRetireResumes(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newApp(t, d, 5)
		old := a.kr.Primary().ID
		if _, err := lifecycle.Rotate(ctx, a.kr, []lifecycle.Database{a.db}, lifecycle.RotateOptions{Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := a.db.Ledger.Retire(ctx, a.kr, old); err != nil { // the first write only
			t.Fatal(err)
		}
		if err := a.db.Ledger.Check(ctx, a.kr); err != nil {
			t.Fatalf("between the two writes: %v", err)
		}
		if got := a.keysOf(t); got[a.kr.Primary().ID] != 5 {
			t.Fatalf("values between the two writes: %v", got)
		}
		if _, err := lifecycle.Retire(ctx, a.kr, []lifecycle.Database{a.db}, old); err != nil {
			t.Fatalf("the retirement run again: %v", err)
		}
		if _, ok := a.kr.Lookup(old); ok {
			t.Fatal("the key is still in the keyring")
		}
		if err := a.db.Ledger.Check(ctx, a.kr); err != nil {
			t.Fatal(err)
		}
	})
}
