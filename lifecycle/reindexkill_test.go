package lifecycle_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// rekeyChildEnv makes the test binary run TestReindexChild's loop.
const rekeyChildEnv = "WARD_REKEY_CHILD"

// TestReindexChild is the killed process of TestReindexKilled: it
// re-keys the users' blind index and rotates, over and over, until it is
// killed.
func TestReindexChild(t *testing.T) {
	if os.Getenv(rekeyChildEnv) == "" {
		t.Skip("run by TestReindexKilled")
	}
	ctx := context.Background()
	mk, err := local.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Load(ctx, os.Getenv("CHILD_KEYRING"), mk)
	if err != nil {
		t.Fatal(err)
	}
	dialect, err := field.ParseDialect(os.Getenv("CHILD_DRIVER"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(os.Getenv("CHILD_DRIVER"), os.Getenv("CHILD_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	d := lifecycle.Database{Name: "child", DB: db, Dialect: dialect, Ledger: &ledger.Ledger{DB: db, Dialect: dialect, Table: os.Getenv("CHILD_LEDGER")}}
	poll := fleet.WaitOptions{Poll: 10 * time.Millisecond}
	for {
		if _, err := lifecycle.Reindex(ctx, kr, d, os.Getenv("CHILD_TABLE"), "email", "", lifecycle.ReindexOptions{Fleet: poll, Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{d}, lifecycle.RotateOptions{Fleet: poll, Wait: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
}

// killTarget is a moment of a re-key at which TestReindexKilled kills
// the process running it.
type killTarget struct {
	name string
	// at says whether the moment has come, from the index's record, the
	// epoch it had when the process started and the counts of rows whose
	// current and spare columns hold a value.
	at func(rec ledger.IndexColumn, start keyring.KeyID, cur, spare int) bool
}

var killTargets = []killTarget{
	{"first phase recorded", func(r ledger.IndexColumn, _ keyring.KeyID, _, _ int) bool {
		return r.Rekey != nil && r.Rekey.Phase == ledger.RekeyBoth
	}},
	{"mid-fill", func(r ledger.IndexColumn, _ keyring.KeyID, _, spare int) bool {
		return r.Rekey != nil && r.Rekey.Phase == ledger.RekeyBoth && spare >= rekeySeeded/3
	}},
	{"filled recorded", func(r ledger.IndexColumn, _ keyring.KeyID, _, _ int) bool {
		return r.Rekey != nil && r.Rekey.Phase == ledger.RekeyFilled
	}},
	{"old column cleared", func(r ledger.IndexColumn, _ keyring.KeyID, cur, _ int) bool {
		return r.Rekey != nil && r.Rekey.Phase == ledger.RekeyFilled && cur == 0
	}},
	{"switched (rotating)", func(r ledger.IndexColumn, start keyring.KeyID, _, _ int) bool {
		return r.Rekey == nil && r.Epoch != start
	}},
}

// rekeySeeded is how many users TestReindexKilled starts with.
const rekeySeeded = 1000

// TestReindexKilled: a process re-keying a blind index and rotating,
// over and over, is killed with SIGKILL at each moment of the re-key (its
// first phase recorded, mid-fill, filled recorded, the old column
// cleared, just switched and rotating) and once more mid-fill, while four clients sign up and log
// in. Every log-in finds its user throughout, after every kill every
// user is found, and a re-key run after the last kill finishes: one
// account per address, every row indexed under the current epoch in the
// current column, the other column empty.
func TestReindexKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		a := newIndexApp(t, d, false)
		existing := a.seed(t, rekeySeeded)
		stop := make(chan struct{})
		missed, done, wait := a.traffic(t, existing, stop)
		defer func() { close(stop); wait() }()
		targets := append(killTargets, killTargets[1])
		for _, target := range targets {
			a.killRekeyAt(t, d, target)
			if n := missed.Load(); n > 0 {
				t.Fatalf("after the kill %s: %d log-ins found nobody or someone else", target.name, n)
			}
			a.findAll(t, existing)
		}
		t.Logf("%d log-ins and sign-ups through %d kills", done.Load(), len(targets))
		opts := lifecycle.ReindexOptions{Fleet: fleet.WaitOptions{Poll: 10 * time.Millisecond}, Wait: time.Minute}
		res, err := lifecycle.Reindex(ctx, a.kr, a.db, a.table, "email", "", opts)
		if err != nil {
			t.Fatalf("the re-key after the kills: %v", err)
		}
		if again, err := lifecycle.Reindex(ctx, a.kr, a.db, a.table, "email", "", opts); err != nil || !again.Current || again.Index.Epoch != a.kr.Primary().ID {
			t.Fatalf("the re-key again: %+v %v (primary %v)", again, err, a.kr.Primary().ID)
		}
		a.checkIndex(t, res.Index)
	})
}

// killRekeyAt starts TestReindexChild and kills it once the re-key is
// at target (within 3 ms after it is seen).
func (a *indexApp) killRekeyAt(t *testing.T, d dbtest.DB, target killTarget) {
	t.Helper()
	ctx := context.Background()
	start := a.indexRecord(t).Epoch
	cmd := exec.Command(os.Args[0], "-test.run=^TestReindexChild$")
	cmd.Env = append(os.Environ(), rekeyChildEnv+"=1", local.EnvVar+"="+a.mk.Encode(), "CHILD_KEYRING="+a.krPath,
		"CHILD_DRIVER="+d.Driver, "CHILD_DSN="+d.DSN, "CHILD_TABLE="+a.table, "CHILD_LEDGER="+a.db.Ledger.Table)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("the re-keying process ended before %s: %v", target.name, err)
		default:
		}
		rec := a.indexRecord(t)
		cur, spare := rec.Columns()
		var n, m int
		if err := a.db.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(%s), count(%s) FROM %s`, cur, spare, a.table)).Scan(&n, &m); err != nil {
			t.Fatal(err)
		}
		if target.at(rec, start, n, m) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the re-key never reached %s", target.name)
		}
	}
	time.Sleep(rand.N(3 * time.Millisecond))
	cmd.Process.Kill()
	<-exited
	t.Logf("killed at %s: %+v", target.name, a.indexRecord(t))
}

// indexRecord reads the ledger's record of the users' index.
func (a *indexApp) indexRecord(t *testing.T) ledger.IndexColumn {
	t.Helper()
	st, err := a.db.Ledger.Verified(context.Background(), a.kr)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range st.Indexes {
		if x.Table == a.table && x.Column == "email" {
			return x
		}
	}
	t.Fatal("the ledger records no index of the users")
	return ledger.IndexColumn{}
}

// seed adds n users in one transaction; user i has id i.
func (a *indexApp) seed(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := a.db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	insert := a.db.Dialect.Rebind(`INSERT INTO ` + a.table + ` (id, email, email_idx, email_idx2) VALUES (?, ?, ?, ?)`)
	var emails []string
	for i := range n {
		email := fmt.Sprintf("User%d@Example.com", i)
		ct, err := a.col.Seal(field.RowInt(int64(i)), []byte(email))
		if err != nil {
			t.Fatal(err)
		}
		x, y, err := a.idx.WriteTx(ctx, tx, email)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, insert, i, ct, x, y); err != nil {
			t.Fatal(err)
		}
		emails = append(emails, email)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return emails
}

// findAll looks every seeded user up, as a process that just refreshed
// its view of the index would.
func (a *indexApp) findAll(t *testing.T, emails []string) {
	t.Helper()
	ctx := context.Background()
	if err := a.idx.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for i, e := range emails {
		if id, ok, err := a.lookUp(ctx, e); err != nil || !ok || id != int64(i) {
			t.Fatalf("user %d (%s): found %d %v %v", i, e, id, ok, err)
		}
	}
}
