package subject

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/killtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// faultChildEnv makes the test binary run TestFaultChild's loop.
const faultChildEnv = "WARD_FAULT_CHILD"

// faultUsers is how many subjects the fault loops work on.
const faultUsers = 40

// secretOf is a subject's key-bearing secret (old or new).
func secretOf(sub, which string) []byte {
	h := sha256.Sum256([]byte(which + "\x00" + sub))
	return h[:]
}

// faultEnv is the database, keyring file and column the loops share with
// their child processes.
type faultEnv struct {
	d      dbtest.DB
	kr     *keyring.Keyring
	mk     *local.MasterKey
	tables []string // ledger, keys, tombstones, sessions, messages
}

func (f *faultEnv) config(db *sql.DB, kr *keyring.Keyring) Config {
	dialect, _ := field.ParseDialect(f.d.Driver)
	return Config{DB: db, Dialect: dialect, Keyring: kr, Ledger: &ledger.Ledger{DB: db, Dialect: dialect, Table: f.tables[0]},
		Namespace: "users", KeysTable: f.tables[1], TombstonesTable: f.tables[2], SessionsTable: f.tables[3], TTL: time.Nanosecond}
}

func column(t testing.TB, kr *keyring.Keyring, s *Store, table string) *field.Column {
	t.Helper()
	c, err := field.NewColumn(kr, table, "body", field.Bind("user_id"), field.PerSubject(s, "user_id"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFaultLoops: going private, a password change, a password reset
// without a recovery code, a re-wrap under a new keyring key and a
// rotation of every subject's key are each run by a child process killed
// with SIGKILL at random moments (10 kills each, after progress, then to
// the end); after every kill each subject's value opens — with the one
// secret its state says it holds, under whichever keyring key wraps it —
// or, after a reset without a code, says it is lost: nothing else is lost
// and no operation is left half done.
func TestFaultLoops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		f := &faultEnv{d: d, mk: local.Generate()}
		var err error
		if f.kr, err = keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), f.mk, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		f.tables = []string{d.Table(t, "ledger"), d.Table(t, "keys"), d.Table(t, "tombs"), d.Table(t, "sessions"), d.Table(t, "messages")}
		if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s NOT NULL)`, f.tables[4], d.Blob)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, f.config(d.DB, f.kr))
		if err != nil {
			t.Fatal(err)
		}
		col := column(t, f.kr, s, f.tables[4])
		dialect, _ := field.ParseDialect(d.Driver)
		for i := range faultUsers {
			sub := fmt.Sprint("u", i)
			ct, err := col.SealString(field.RowInt(int64(i)).With(sub), "note of "+sub)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.DB.Exec(dialect.Rebind(`INSERT INTO `+f.tables[4]+` VALUES (?, ?, ?)`), i, sub, ct); err != nil {
				t.Fatal(err)
			}
		}
		// Forgotten subjects: their tombstones move to the new key's
		// integrity epoch with the re-wrap (RemacTombstones), killed too.
		for i := range faultForgotten {
			if err := s.Forget(ctx, fmt.Sprint("gone", i)); err != nil {
				t.Fatal(err)
			}
		}
		for _, op := range []string{"private", "change", "reset", "rewrap", "rotate"} {
			if op == "rewrap" { // a new keyring key to re-wrap under
				if _, err := keyring.NewManager(f.kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
					t.Fatal(err)
				}
			}
			f.loop(t, op, 10)
		}
	})
}

// loop runs op in children killed kills times, checking after each.
func (f *faultEnv) loop(t *testing.T, op string, kills int) {
	t.Helper()
	for kill := range kills {
		killtest.KillAfter(t, "TestFaultChild", op, 40*time.Millisecond, faultChildEnv+"="+op, local.EnvVar+"="+f.mk.Encode(),
			"CHILD_DRIVER="+f.d.Driver, "CHILD_DSN="+f.d.DSN, "CHILD_KEYRING="+f.kr.Path(), "CHILD_TABLES="+strings.Join(f.tables, ","))
		f.check(t, op, kill)
	}
	// Then to the end, and every value still opens.
	ctx := context.Background()
	s, err := Open(ctx, f.config(f.d.DB, f.kr))
	if err != nil {
		t.Fatal(err)
	}
	if err := runFaultOp(ctx, s, f.d.DB, op, func() {}); err != nil {
		t.Fatalf("%s, finishing: %v", op, err)
	}
	f.check(t, op, kills)
	if op == "rewrap" { // nothing left under the older keyring key
		c, err := s.Census(ctx)
		if err != nil || len(c.ByKey) != 1 || c.ByKey[f.kr.Primary().ID] != faultUsers/2 {
			t.Fatalf("after the re-wrap: %+v %v", c, err)
		}
		for _, k := range f.kr.Keys() {
			n, err := s.TombstonesAt(ctx, k.ID)
			if err != nil || (k.ID != f.kr.Primary().ID && n != 0) {
				t.Fatalf("after the re-wrap: %d tombstones under the epoch of %v, %v", n, k.ID, err)
			}
		}
	}
}

// faultForgotten is how many subjects the loops start forgotten.
const faultForgotten = 10

// check opens every subject's value as its state says it must open, and
// finds every forgotten subject's tombstone valid.
func (f *faultEnv) check(t *testing.T, op string, kill int) {
	t.Helper()
	ctx := context.Background()
	if err := f.kr.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, f.config(f.d.DB, f.kr))
	if err != nil {
		t.Fatal(err)
	}
	if valid, bad, err := s.Tombstoned(ctx); err != nil || len(valid) != faultForgotten || len(bad) != 0 {
		t.Fatalf("%s, kill %d: tombstones valid %v, bad %v, %v", op, kill, valid, bad, err)
	}
	col := column(t, f.kr, s, f.tables[4])
	dialect, _ := field.ParseDialect(f.d.Driver)
	for i := range faultUsers {
		sub := fmt.Sprint("u", i)
		var ct field.Ciphertext
		if err := f.d.DB.QueryRow(dialect.Rebind(`SELECT body FROM `+f.tables[4]+` WHERE id = ?`), i).Scan(&ct); err != nil {
			t.Fatal(err)
		}
		c := col
		if private, err := s.Private(ctx, sub); err != nil {
			t.Fatal(err)
		} else if private {
			u, which, err := unlockAny(ctx, s, sub)
			if err != nil {
				t.Fatalf("%s, kill %d: %s unlocks with no secret: %v", op, kill, sub, err)
			}
			c = col.WithKeys(u)
			if which == "reset" { // a reset without a code: the earlier value is lost, and says so
				if _, err := c.OpenString(field.RowInt(int64(i)).With(sub), ct); !errors.Is(err, field.ErrSubjectKeyLost) {
					t.Fatalf("%s, kill %d: %s's value after a reset: %v", op, kill, sub, err)
				}
				continue
			}
		}
		if got, err := c.OpenString(field.RowInt(int64(i)).With(sub), ct); err != nil || got != "note of "+sub {
			t.Fatalf("%s, kill %d: %s's value: %q %v", op, kill, sub, got, err)
		}
	}
}

// unlockAny unlocks a private subject with whichever of its secrets
// opens it: exactly one must.
func unlockAny(ctx context.Context, s *Store, sub string) (*Unlocked, string, error) {
	var opened []string
	var u *Unlocked
	for _, which := range []string{"old", "new", "reset"} {
		if got, err := s.Unlock(ctx, sub, secretOf(sub, which)); err == nil {
			u = got
			opened = append(opened, which)
		} else if !errors.Is(err, ErrWrongSecret) {
			return nil, "", err
		}
	}
	if len(opened) != 1 {
		return nil, "", fmt.Errorf("opened by %v (exactly one secret must open it)", opened)
	}
	return u, opened[0], nil
}

// TestFaultChild is the child of TestFaultLoops: it runs one operation
// over every subject, writing the progress file after its first step,
// until done; then it waits for the kill.
func TestFaultChild(t *testing.T) {
	op := os.Getenv(faultChildEnv)
	if op == "" {
		t.Skip("run by TestFaultLoops")
	}
	ctx := context.Background()
	db, kr := childOpen(t)
	f := &faultEnv{d: dbtest.DB{Driver: os.Getenv("CHILD_DRIVER")}, tables: strings.Split(os.Getenv("CHILD_TABLES"), ",")}
	s, err := Open(ctx, f.config(db, kr))
	if err != nil {
		t.Fatal(err)
	}
	if err := runFaultOp(ctx, s, db, op, killtest.Progressed); err != nil {
		t.Fatal(err)
	}
	killtest.Progressed()
	select {}
}

// runFaultOp runs one operation over every subject (each step idempotent,
// so a child after a kill continues).
func runFaultOp(ctx context.Context, s *Store, db *sql.DB, op string, progressed func()) error {
	switch op {
	case "rewrap":
		_, err := s.Reseal(ctx, ResealOptions{Batch: 3, Progress: func(ResealStats) { progressed() }})
		return err
	case "rotate":
		_, err := s.RotateAll(ctx)
		return err
	}
	for i := range faultUsers {
		sub := fmt.Sprint("u", i)
		var err error
		switch op {
		case "private": // the even subjects; the odd ones stay keyring-wrapped
			if private, perr := s.Private(ctx, sub); i%2 == 1 || perr != nil || private {
				err = perr
				break
			}
			_, _, err = s.MakePrivate(ctx, sub, secretOf(sub, "old"), PrivateOptions{})
		case "change":
			if i%2 == 0 {
				err = changeSecret(ctx, s, db, sub)
			}
		case "reset": // every fourth subject forgets their password, without a recovery code
			if i%4 == 0 {
				err = resetSecret(ctx, s, db, sub)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", op, sub, err)
		}
		progressed()
	}
	return nil
}

// resetSecret resets a private subject's password without a recovery
// code (its earlier values are lost, by design), in a transaction.
func resetSecret(ctx context.Context, s *Store, db *sql.DB, sub string) error {
	if _, err := s.Unlock(ctx, sub, secretOf(sub, "reset")); err == nil {
		return nil // done before a kill
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := s.Reset(ctx, tx, sub, "", secretOf(sub, "reset")); err != nil {
		return err
	}
	return tx.Commit()
}

// changeSecret moves a private subject from its old secret to its new
// one, in a transaction as a password change stores its new hash.
func changeSecret(ctx context.Context, s *Store, db *sql.DB, sub string) error {
	if _, err := s.Unlock(ctx, sub, secretOf(sub, "new")); err == nil {
		return nil // done before a kill
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.ChangeSecret(ctx, tx, sub, secretOf(sub, "old"), secretOf(sub, "new")); err != nil {
		return err
	}
	return tx.Commit()
}
