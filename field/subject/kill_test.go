package subject

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// forgetChildEnv makes the test binary run TestForgetChild's loop.
const forgetChildEnv = "WARD_FORGET_CHILD"

// TestForgetKilled: a process forgets users one after another, with a
// forget journal, and is killed with SIGKILL at a random moment, 15
// times; after each kill the valid tombstones equal the ledger's count
// (a forget is counted exactly once, whatever the crash point), every
// tombstone's subject has no key left, every tombstoned subject is in the
// journal, and the next process's retry of the forget it was in finishes
// it, counting nothing twice.
func TestForgetKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		k := newKillEnv(t, d)
		kr, jdir, cfg := k.kr, k.jdir, k.config()
		s, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		const users = 400
		if _, err := s.Provision(ctx, subjects(users)); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Ledger.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		for kill := range 15 {
			cmd := k.child("TestForgetChild", forgetChildEnv, "CHILD_USERS="+strconv.Itoa(users))
			before := forgottenCount(t, s)
			if before == users { // every user forgotten: a fast machine ends early
				if kill < 5 {
					t.Fatalf("every user was forgotten after %d kills", kill)
				}
				break
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the child has made progress (it may be slow to start on
			// a busy machine), a random moment later.
			for deadline := time.Now().Add(60 * time.Second); forgottenCount(t, s) == before; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child forgot nobody in 60 s")
				}
			}
			time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
			checkForgets(t, ctx, s, kr, jdir, kill)
		}
	})
}

// forgottenCount counts the tombstones.
func forgottenCount(t *testing.T, s *Store) int {
	t.Helper()
	valid, _, err := s.Tombstoned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(valid)
}

func subjects(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("u", i)
	}
	return out
}

// checkForgets checks the invariants after a kill.
func checkForgets(t *testing.T, ctx context.Context, s *Store, kr *keyring.Keyring, jdir string, kill int) {
	t.Helper()
	if err := kr.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	valid, counted, err := s.Audit(ctx)
	if err != nil || uint64(valid) != counted {
		t.Fatalf("after kill %d: %d valid tombstones, %d counted: %v", kill, valid, counted, err)
	}
	tombstoned, _, err := s.Tombstoned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.cfg.Ledger.Verified(ctx, kr)
	if err != nil {
		t.Fatalf("after kill %d: %v", kill, err)
	}
	r, err := forgetlog.Read(kr, st.Database, jdir)
	if err != nil {
		t.Fatal(err)
	}
	holders, err := s.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, h := range holders {
		have[h] = true
	}
	for _, sub := range tombstoned {
		if have[sub] {
			t.Fatalf("after kill %d: %s has a tombstone and a key", kill, sub)
		}
		if _, ok := r.Forgotten("users", sub); !ok {
			t.Fatalf("after kill %d: %s is forgotten but not journaled", kill, sub)
		}
	}
	t.Logf("kill %d: %d forgotten, counted %d, journal %d (+%d torn)", kill, valid, counted, r.Count("users"), r.Invalid)
}

// TestForgetChild is the child of TestForgetKilled: it forgets the users
// in order, the first again (a retry of a forget a kill may have cut),
// until killed.
func TestForgetChild(t *testing.T) {
	if os.Getenv(forgetChildEnv) == "" {
		t.Skip("run by TestForgetKilled")
	}
	ctx := context.Background()
	s, err := Open(ctx, childConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	users, _ := strconv.Atoi(os.Getenv("CHILD_USERS"))
	tombstoned, _, _ := s.Tombstoned(ctx)
	for i := max(len(tombstoned)-1, 0); i < users; i++ {
		if err := s.Forget(ctx, fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	select {} // wait for the kill
}

// killEnv is what a kill -9 test hands its child processes: the
// database, the keyring file (its master key through the environment),
// the store's tables and the journal's folder.
type killEnv struct {
	d       dbtest.DB
	dialect field.Dialect
	mk      *local.MasterKey
	kr      *keyring.Keyring
	names   []string // ledger, keys, tombstones, sessions
	lg      *ledger.Ledger
	jdir    string
}

// newKillEnv makes a keyring file and names the tables, in d.
func newKillEnv(t *testing.T, d dbtest.DB) *killEnv {
	t.Helper()
	k := &killEnv{d: d, mk: local.Generate(), jdir: filepath.Join(t.TempDir(), "journal")}
	k.dialect, _ = field.ParseDialect(d.Driver)
	var err error
	if k.kr, err = keyring.Create(context.Background(), filepath.Join(t.TempDir(), "kr.json"), k.mk, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	k.names = []string{d.Table(t, "ledger"), d.Table(t, "keys"), d.Table(t, "tombs"), d.Table(t, "sessions")}
	k.lg = &ledger.Ledger{DB: d.DB, Dialect: k.dialect, Table: k.names[0]}
	return k
}

// config is the parent's store over the tables, without a journal.
func (k *killEnv) config() Config {
	return Config{DB: k.d.DB, Dialect: k.dialect, Keyring: k.kr, Ledger: k.lg, Namespace: "users",
		KeysTable: k.names[1], TombstonesTable: k.names[2], SessionsTable: k.names[3]}
}

// child is the command running test in a child process (flagged by
// setting envVar), told where k is, plus extra environment.
func (k *killEnv) child(test, envVar string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), envVar+"=1", local.EnvVar+"="+k.mk.Encode(), "CHILD_DRIVER="+k.d.Driver, "CHILD_DSN="+k.d.DSN,
		"CHILD_KEYRING="+k.kr.Path(), "CHILD_JOURNAL="+k.jdir, "CHILD_TABLES="+strings.Join(k.names, " "))
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

// childOpen opens, in a child process, the database and keyring file its
// parent named (CHILD_DRIVER, CHILD_DSN, CHILD_KEYRING; the master key in
// the environment).
func childOpen(t *testing.T) (*sql.DB, *keyring.Keyring) {
	t.Helper()
	db, err := sql.Open(os.Getenv("CHILD_DRIVER"), os.Getenv("CHILD_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	mk, err := local.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Load(context.Background(), os.Getenv("CHILD_KEYRING"), mk)
	if err != nil {
		t.Fatal(err)
	}
	return db, kr
}

// childConfig is, in a child process, the store its parent's killEnv
// names, with the journal.
func childConfig(t *testing.T) Config {
	t.Helper()
	db, kr := childOpen(t)
	dialect, _ := field.ParseDialect(os.Getenv("CHILD_DRIVER"))
	names := strings.Fields(os.Getenv("CHILD_TABLES"))
	if len(names) != 4 {
		t.Fatalf("CHILD_TABLES %q", os.Getenv("CHILD_TABLES"))
	}
	j, err := forgetlog.Open(os.Getenv("CHILD_JOURNAL"), kr)
	if err != nil {
		t.Fatal(err)
	}
	return Config{DB: db, Dialect: dialect, Keyring: kr, Ledger: &ledger.Ledger{DB: db, Dialect: dialect, Table: names[0]},
		Namespace: "users", KeysTable: names[1], TombstonesTable: names[2], SessionsTable: names[3], Journal: j}
}

// privateMoveChildEnv makes the test binary run TestPrivateMoveChild.
const privateMoveChildEnv = "WARD_PRIVATE_MOVE_CHILD"

// TestPrivateMoveKilled: a journal of the release before holds 300 v1
// private records; a process opening the store with the journal moves
// them onto the ledger's chain (one transaction; each record journaled
// again as v2 first) and is killed with SIGKILL part-way, up to 5 times.
// After each kill every one of the 300 subjects still reads as private
// (the move either committed whole, marked, or not at all, the v1 records
// still counting), and once the move finishes every one is on the chain.
func TestPrivateMoveKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		k := newKillEnv(t, d)
		kr, lg, jdir := k.kr, k.lg, k.jdir
		if err := lg.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		st, err := lg.Verified(ctx, kr)
		if err != nil {
			t.Fatal(err)
		}
		const users = 300
		before, err := forgetlog.Open(jdir, kr)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range subjects(users) {
			if err := before.Append(ctx, forgetlog.Entry{Database: st.Database, Namespace: "users", Subject: sub, Private: true}); err != nil {
				t.Fatal(err)
			}
		}
		before.Close()
		run := func(kill bool) {
			cmd := k.child("TestPrivateMoveChild", privateMoveChildEnv)
			if !kill {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("the move: %v\n%s", err, out)
				}
				return
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the child has journaled some v2 records, at a random point.
			want := chainedLines(t, jdir) + 1 + rand.IntN(users-1)
			for deadline := time.Now().Add(60 * time.Second); chainedLines(t, jdir) < want && cmd.ProcessState == nil; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child journaled nothing in 60 s")
				}
			}
			cmd.Process.Kill()
			cmd.Wait()
		}
		for kill := range 5 {
			if marked(t, lg, kr) {
				break
			}
			lines := chainedLines(t, jdir)
			run(true)
			t.Logf("kill %d: %d v2 records journaled before it, %d after; moved: %v", kill, lines, chainedLines(t, jdir), marked(t, lg, kr))
			checkPrivate(t, lg, kr, jdir, users)
		}
		run(false)
		if !marked(t, lg, kr) {
			t.Fatal("the move did not finish")
		}
		checkPrivate(t, lg, kr, jdir, users)
		r, err := forgetlog.Read(kr, st.Database, jdir)
		if err != nil {
			t.Fatal(err)
		}
		st, _ = lg.Verified(ctx, kr)
		if left := r.Unchained("users", forgetlog.Commitment{Tally: st.Tally(PrivateCounter("users"))}); len(left) != 0 {
			t.Fatalf("%d subjects off the chain after the move", len(left))
		}
	})
}

// chainedLines counts the v2 private records in the journal's files.
func chainedLines(t *testing.T, dir string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+forgetlog.Ext))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "ward-private-v2 ")
	}
	return n
}

// marked reports whether the ledger records the move.
func marked(t *testing.T, lg *ledger.Ledger, kr *keyring.Keyring) bool {
	t.Helper()
	ok, err := lg.Marked(context.Background(), kr, PrivateV2Mark("users"))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// checkPrivate checks that every subject reads as private under what the
// ledger commits to now.
func checkPrivate(t *testing.T, lg *ledger.Ledger, kr *keyring.Keyring, dir string, users int) {
	t.Helper()
	ctx := context.Background()
	if err := kr.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := lg.Verified(ctx, kr)
	if err != nil {
		t.Fatal(err)
	}
	r, err := forgetlog.Read(kr, st.Database, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := forgetlog.Commitment{Tally: st.Tally(PrivateCounter("users")), V1: !slices.Contains(st.Marks, PrivateV2Mark("users"))}
	for _, sub := range subjects(users) {
		if p, err := r.Private("users", sub, func() (forgetlog.Commitment, error) { return c, nil }); err != nil || !p {
			t.Fatalf("%s is not private (moved: %v, tally %d): %v", sub, !c.V1, c.Tally.Count, err)
		}
	}
}

// TestPrivateMoveChild is the child of TestPrivateMoveKilled: it opens
// the store with the journal (which moves the v1 records) and exits.
func TestPrivateMoveChild(t *testing.T) {
	if os.Getenv(privateMoveChildEnv) == "" {
		t.Skip("run by TestPrivateMoveKilled")
	}
	if _, err := Open(context.Background(), childConfig(t)); err != nil {
		t.Fatal(err)
	}
}
