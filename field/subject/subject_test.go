package subject

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// env is one database with a keyring file, its ledger, and a messages
// table whose body column is sealed per user.
type env struct {
	db       *sql.DB
	d        field.Dialect
	kr       *keyring.Keyring
	path     string
	mk       *local.MasterKey
	ledger   *ledger.Ledger
	messages string
	keys     string
	tombs    string
}

func forEachDB(t *testing.T, fn func(t *testing.T, e *env)) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		dialect, err := field.ParseDialect(d.Driver)
		if err != nil {
			t.Fatal(err)
		}
		e := &env{db: d.DB, d: dialect, path: filepath.Join(t.TempDir(), "kr.json"), mk: local.Generate()}
		if e.kr, err = keyring.Create(ctx, e.path, e.mk, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		e.ledger = &ledger.Ledger{DB: d.DB, Dialect: dialect, Table: d.Table(t, "ledger")}
		if err := e.ledger.Record(ctx, e.kr); err != nil {
			t.Fatal(err)
		}
		e.messages, e.keys, e.tombs = d.Table(t, "messages"), d.Table(t, "subject_keys"), d.Table(t, "tombstones")
		if _, err := d.DB.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s NOT NULL)`, e.messages, d.Blob)); err != nil {
			t.Fatal(err)
		}
		fn(t, e)
	})
}

// store opens a store as one process of a fleet would (its own cache).
func (e *env) store(t *testing.T, ttl time.Duration) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DB: e.db, Dialect: e.d, Keyring: e.kr, Ledger: e.ledger, Namespace: "users",
		TTL: ttl, KeysTable: e.keys, TombstonesTable: e.tombs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) column(t *testing.T, s *Store) *field.Column {
	t.Helper()
	c, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(s, "user_id"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) insert(t *testing.T, c *field.Column, id int64, user, body string) {
	t.Helper()
	ct, err := c.SealString(field.RowInt(id).With(user), body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(e.d.Rebind(fmt.Sprintf(`INSERT INTO %s (id, user_id, body) VALUES (?, ?, ?)`, e.messages)), id, user, ct); err != nil {
		t.Fatal(err)
	}
}

// exec runs a statement as a database writer would.
func (e *env) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := e.db.Exec(e.d.Rebind(q), args...); err != nil {
		t.Fatal(err)
	}
}

func (e *env) read(t *testing.T, c *field.Column, id int64) (string, error) {
	t.Helper()
	var user string
	var ct field.Ciphertext
	if err := e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT user_id, body FROM %s WHERE id = ?`, e.messages)), id).Scan(&user, &ct); err != nil {
		t.Fatal(err)
	}
	return c.OpenString(field.RowInt(id).With(user), ct)
}

// TestForget: a subject's values open until it is forgotten, then fail
// with ErrSubjectErased — at once in the forgetting process, within the
// TTL in another — while every other subject's values still open; a new
// value for the forgotten subject is refused.
func TestForget(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		ttl := 200 * time.Millisecond
		a, b := e.store(t, ttl), e.store(t, ttl) // two processes
		ca, cb := e.column(t, a), e.column(t, b)
		e.insert(t, ca, 1, "alice", "alice's secret")
		e.insert(t, ca, 2, "bob", "bob's secret")
		e.insert(t, cb, 3, "alice", "alice again")
		for id, want := range map[int64]string{1: "alice's secret", 2: "bob's secret", 3: "alice again"} {
			for _, c := range []*field.Column{ca, cb} {
				if got, err := e.read(t, c, id); err != nil || got != want {
					t.Fatalf("row %d: %q, %v", id, got, err)
				}
			}
		}
		// One key per subject, whichever process sealed first.
		var n int
		e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT count(*) FROM %s WHERE subject = ?`, e.keys)), "alice").Scan(&n)
		if n != 1 {
			t.Fatalf("alice has %d keys", n)
		}
		// Values are class 2 and bound to their subject: moved to bob,
		// alice's value does not open.
		if _, err := e.db.Exec(e.d.Rebind(fmt.Sprintf(`UPDATE %s SET user_id = ? WHERE id = 1`, e.messages)), "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.read(t, ca, 1); err == nil {
			t.Fatal("a value moved to another subject opened")
		}
		e.db.Exec(e.d.Rebind(fmt.Sprintf(`UPDATE %s SET user_id = ? WHERE id = 1`, e.messages)), "alice")

		if err := a.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{1, 3} {
			if _, err := e.read(t, ca, id); !errors.Is(err, field.ErrSubjectErased) {
				t.Fatalf("row %d after forget, same process: %v", id, err)
			}
		}
		if _, err := ca.SealString(field.RowInt(9).With("alice"), "more"); !errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("sealing for a forgotten subject: %v", err)
		}
		if got, err := e.read(t, ca, 2); err != nil || got != "bob's secret" {
			t.Fatalf("bob after alice's forget: %q, %v", got, err)
		}
		// The other process may still hold alice's key, for at most the TTL.
		deadline := time.Now().Add(ttl + 2*time.Second)
		for {
			_, err := e.read(t, cb, 1)
			if errors.Is(err, field.ErrSubjectErased) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("another process still opens a forgotten subject's value after its TTL: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Forgetting twice is fine; the ledger counted one forget, and
		// the audit agrees.
		if err := b.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if valid, counted, err := a.Audit(ctx); err != nil || valid != 1 || counted != 1 {
			t.Fatalf("audit: %d valid, %d counted, %v", valid, counted, err)
		}
	})
}

// TestWriterAttacks: what a database writer can do to subject keys and
// tombstones is reported for what it is, never as an erasure.
func TestWriterAttacks(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond) // no caching: every open reads
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "a")
		e.insert(t, c, 2, "bob", "b")
		e.insert(t, c, 3, "carol", "c")
		// A deleted key row is missing, not erased.
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = ?`, e.keys), "bob")
		if _, err := e.read(t, c, 2); !errors.Is(err, field.ErrSubjectKeyMissing) || errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("deleted key: %v", err)
		}
		// A re-created key has a fresh version: bob's old value still
		// names the deleted one.
		e.insert(t, c, 4, "bob", "b2")
		if _, err := e.read(t, c, 2); !errors.Is(err, field.ErrSubjectKeyMissing) {
			t.Fatalf("old value after a new key: %v", err)
		}
		// A wrapped key moved to another subject does not unwrap.
		var wrapped []byte
		e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT wrapped FROM %s WHERE subject = ?`, e.keys)), "carol").Scan(&wrapped)
		var version int64
		e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT version FROM %s WHERE subject = ?`, e.keys)), "alice").Scan(&version)
		e.exec(t, fmt.Sprintf(`UPDATE %s SET wrapped = ? WHERE subject = ?`, e.keys), wrapped, "alice")
		if _, err := e.read(t, c, 1); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("swapped wrapped key: %v", err)
		}
		// A planted tombstone fails its MAC: reported as tampering, and
		// the value is refused — never "erased".
		e.exec(t, fmt.Sprintf(`INSERT INTO %s (namespace, subject, forgotten_at, epoch, mac) VALUES (?, ?, ?, ?, ?)`, e.tombs), "users", "carol", time.Now().Unix(), 0, "00")
		if _, err := e.read(t, c, 3); !errors.Is(err, ErrTombstoneTampered) || errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("planted tombstone: %v", err)
		}
		if _, _, err := s.Audit(ctx); !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("audit with a planted tombstone: %v", err)
		}
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = ?`, e.tombs), "carol")
		// A real tombstone copied to another subject fails its MAC too.
		if err := s.Forget(ctx, "dave"); err != nil {
			t.Fatal(err)
		}
		e.exec(t, fmt.Sprintf(`UPDATE %s SET subject = ? WHERE subject = ?`, e.tombs), "carol", "dave")
		if _, err := e.read(t, c, 3); !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("moved tombstone: %v", err)
		}
		// A deleted tombstone: the ledger counted one forget, none remains.
		e.exec(t, fmt.Sprintf(`DELETE FROM %s`, e.tombs))
		if _, _, err := s.Audit(ctx); !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("audit after a deleted tombstone: %v", err)
		}
		// And a key row put back after a forget does not bring the subject
		// back while its tombstone stands.
		e.insert(t, c, 5, "erin", "e")
		var ev int64
		var ew []byte
		e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT version, wrapped FROM %s WHERE subject = ?`, e.keys)), "erin").Scan(&ev, &ew)
		if err := s.Forget(ctx, "erin"); err != nil {
			t.Fatal(err)
		}
		e.exec(t, fmt.Sprintf(`INSERT INTO %s (namespace, subject, version, first, wrapped, created_at) VALUES (?, ?, ?, 1, ?, 0)`, e.keys), "users", "erin", ev, ew)
		if _, err := e.read(t, c, 5); !errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("restored key row under a tombstone: %v", err)
		}
	})
}

// TestWriterHugeValues: a database writer's oversized wrapped key,
// tombstone MAC or subject ID is refused by its length and never read:
// the process allocates far less than the 16 MiB value.
func TestWriterHugeValues(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "a")
		e.insert(t, c, 2, "carol", "c")
		// allocated runs fn and returns what the process allocated meanwhile.
		allocated := func(fn func()) uint64 {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			fn()
			runtime.ReadMemStats(&after)
			return after.TotalAlloc - before.TotalAlloc
		}
		const huge = 16 << 20
		e.exec(t, fmt.Sprintf(`UPDATE %s SET wrapped = ? WHERE subject = ?`, e.keys), bytes.Repeat([]byte{0x42}, huge), "alice")
		var err error
		if n := allocated(func() { _, err = e.read(t, c, 1) }); !errors.Is(err, field.ErrSubjectKeyMissing) || !strings.Contains(err.Error(), "more than 4096 bytes") || n > huge/4 {
			t.Fatalf("an oversized wrapped key: %v, %d bytes allocated", err, n)
		}
		if n := allocated(func() { _, err = c.SealString(field.RowInt(3).With("alice"), "new") }); !errors.Is(err, field.ErrSubjectKeyMissing) || n > huge/4 {
			t.Fatalf("sealing under an oversized newest key: %v, %d bytes allocated", err, n)
		}
		if err := s.Forget(ctx, "carol"); err != nil {
			t.Fatal(err)
		}
		e.exec(t, fmt.Sprintf(`UPDATE %s SET mac = ? WHERE subject = ?`, e.tombs), strings.Repeat("0", huge), "carol")
		if n := allocated(func() { _, err = e.read(t, c, 2) }); !errors.Is(err, ErrTombstoneTampered) || n > huge/4 {
			t.Fatalf("an oversized tombstone MAC: %v, %d bytes allocated", err, n)
		}
		if n := allocated(func() { _, _, err = s.Audit(ctx) }); !errors.Is(err, ErrTombstoneTampered) || n > huge/4 {
			t.Fatalf("audit with an oversized tombstone MAC: %v, %d bytes allocated", err, n)
		}
		// A subject ID past MaxSubjectLen (within PostgreSQL's index
		// limit) stops a re-wrap rather than restarting its pages.
		e.exec(t, fmt.Sprintf(`UPDATE %s SET wrapped = ? WHERE subject = ?`, e.keys), []byte{1}, "alice")
		if e.d == field.MySQL { // its subject column holds MaxSubjectLen bytes: the writer widens it first
			e.exec(t, fmt.Sprintf(`ALTER TABLE %s MODIFY subject VARBINARY(1024) NOT NULL`, e.keys))
		}
		e.exec(t, fmt.Sprintf(`INSERT INTO %s (namespace, subject, version, wrapped, created_at) VALUES (?, ?, 7, ?, 0)`, e.keys), "users", strings.Repeat("s", 1000), []byte{1})
		if _, err := s.Reseal(ctx, ResealOptions{}); err == nil || !strings.Contains(err.Error(), "subject ID") {
			t.Fatalf("re-wrap with an oversized subject ID: %v", err)
		}
	})
}

// TestConcurrentFirstKey: processes sealing a new subject's first values
// at once agree on one key.
func TestConcurrentFirstKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		const procs = 6
		versions := make([]uint32, procs)
		var wg sync.WaitGroup
		stores := make([]*Store, procs)
		for i := range stores {
			stores[i] = e.store(t, time.Minute)
		}
		for i := range procs {
			wg.Go(func() {
				sk, err := stores[i].SealingKey("zoe")
				if err != nil {
					t.Error(err)
					return
				}
				versions[i] = sk.Version()
			})
		}
		wg.Wait()
		for _, v := range versions[1:] {
			if v != versions[0] {
				t.Fatalf("processes sealed under different keys: %v", versions)
			}
		}
		var n int
		e.db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM %s`, e.keys)).Scan(&n)
		if n != 1 {
			t.Fatalf("%d key rows for one subject", n)
		}
	})
}

// backup is a copy of the rows of some tables, as a database backup holds
// them.
type backup map[string][][]any

func (e *env) backup(t *testing.T, tables ...string) backup {
	t.Helper()
	b := backup{}
	for _, tbl := range tables {
		rows, err := e.db.Query(`SELECT * FROM ` + tbl)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			b[tbl] = append(b[tbl], vals)
		}
		rows.Close()
	}
	return b
}

// restore replaces the tables' rows with the backup's.
func (e *env) restore(t *testing.T, b backup, tables ...string) {
	t.Helper()
	for _, tbl := range tables {
		if _, err := e.db.Exec(`DELETE FROM ` + tbl); err != nil {
			t.Fatal(err)
		}
		for _, vals := range b[tbl] {
			ph := ""
			for i := range vals {
				if i > 0 {
					ph += ", "
				}
				ph += e.d.Placeholder(i + 1)
			}
			if _, err := e.db.Exec(fmt.Sprintf(`INSERT INTO %s VALUES (%s)`, tbl, ph), vals...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBackupAfterRetire: the backup window closes. A database backup
// taken before a forget still holds the forgotten subject's wrapped key;
// after the keyring rotates, every subject key is re-wrapped and the old
// keyring key is retired, restoring that backup in full opens nothing of
// the subject. Restoring only the values from it, beside the live key
// table, opens every other subject's values and none of the forgotten
// one's.
func TestBackupAfterRetire(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		for i, u := range []string{"alice", "bob", "carol"} {
			e.insert(t, c, int64(i+1), u, u+"'s secret")
		}
		old := e.backup(t, e.messages, e.keys, e.tombs)
		oldKey := e.kr.Primary().ID

		if err := s.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		newKey, err := keyring.NewManager(e.kr).Add(ctx, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ledger.Record(ctx, e.kr, newKey); err != nil {
			t.Fatal(err)
		}
		if err := keyring.NewManager(e.kr).Promote(ctx, newKey); err != nil {
			t.Fatal(err)
		}
		st, err := s.Reseal(ctx, ResealOptions{Workers: 2, Batch: 1})
		if err != nil || st.Resealed != 2 {
			t.Fatalf("rewrap: %+v, %v", st, err)
		}
		// Resumable: a second run finds nothing to do.
		if st, err := s.Reseal(ctx, ResealOptions{}); err != nil || st.Resealed != 0 || st.Current != 2 {
			t.Fatalf("second rewrap: %+v, %v", st, err)
		}
		census, err := s.Census(ctx)
		if err != nil || census.ByKey[oldKey] != 0 || census.ByKey[newKey] != 2 {
			t.Fatalf("census %v, %v", census, err)
		}
		if err := e.ledger.Retire(ctx, e.kr, oldKey); err != nil {
			t.Fatal(err)
		}
		if err := keyring.NewManager(e.kr).Remove(ctx, oldKey); err != nil {
			t.Fatal(err)
		}
		if err := e.ledger.Check(ctx, e.kr); err != nil {
			t.Fatalf("ledger after retire: %v", err)
		}
		for id, want := range map[int64]string{2: "bob's secret", 3: "carol's secret"} {
			if got, err := e.read(t, c, id); err != nil || got != want {
				t.Fatalf("live row %d: %q, %v", id, got, err)
			}
		}
		// The whole old backup put back: alice's key row and no tombstone.
		live := e.backup(t, e.keys, e.tombs)
		e.restore(t, old, e.messages, e.keys, e.tombs)
		if _, err := e.read(t, c, 1); err == nil || !errors.Is(err, keyring.ErrUnknownKey) {
			t.Fatalf("alice's value from the old backup: %v", err)
		}
		// The values from the backup beside the live keys: others open,
		// alice's never.
		e.restore(t, live, e.keys, e.tombs)
		if _, err := e.read(t, c, 1); !errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("alice's restored value beside the live keys: %v", err)
		}
		for id, want := range map[int64]string{2: "bob's secret", 3: "carol's secret"} {
			if got, err := e.read(t, c, id); err != nil || got != want {
				t.Fatalf("restored row %d: %q, %v", id, got, err)
			}
		}
	})
}

// TestProvision: keys created in bulk for subjects without one; a subject
// with a key keeps it, a forgotten one gets none; the keys serve seals.
func TestProvision(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Minute)
		c := e.column(t, s)
		e.insert(t, c, 1, "has-key", "kept")
		if err := s.Forget(ctx, "forgotten"); err != nil {
			t.Fatal(err)
		}
		subjects := []string{"has-key", "forgotten"}
		for i := range 2500 {
			subjects = append(subjects, fmt.Sprintf("new-%d", i))
		}
		n, err := s.Provision(ctx, subjects)
		if err != nil || n != 2500 {
			t.Fatalf("provisioned %d, %v", n, err)
		}
		if n, err := s.Provision(ctx, subjects); err != nil || n != 0 {
			t.Fatalf("second provision: %d, %v", n, err)
		}
		if got, err := e.read(t, c, 1); err != nil || got != "kept" {
			t.Fatalf("a provisioned subject's old key: %q %v", got, err)
		}
		e.insert(t, c, 2, "new-7", "fresh")
		if got, err := e.read(t, c, 2); err != nil || got != "fresh" {
			t.Fatalf("a provisioned key: %q %v", got, err)
		}
		if _, err := c.SealString(field.RowInt(3).With("forgotten"), "x"); !errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("a forgotten subject after provisioning: %v", err)
		}
		census, err := s.Census(ctx)
		if err != nil || census.ByKey[e.kr.Primary().ID] != 2501 {
			t.Fatalf("census %+v %v", census, err)
		}
		if ns, err := Namespaces(ctx, e.db, e.d, e.keys); err != nil || len(ns) != 1 || ns[0] != "users" {
			t.Fatalf("namespaces %v %v", ns, err)
		}
	})
}

// TestRewrapShards: three shards re-wrap a namespace together, each key
// once.
func TestRewrapShards(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Minute)
		var subjects []string
		for i := range 300 {
			subjects = append(subjects, fmt.Sprintf("s%d", i))
		}
		if _, err := s.Provision(ctx, subjects); err != nil {
			t.Fatal(err)
		}
		if _, err := keyring.NewManager(e.kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		var total int64
		for i := range 3 {
			st, err := s.Reseal(ctx, ResealOptions{Shard: i, Shards: 3, Batch: 50})
			if err != nil {
				t.Fatal(err)
			}
			if st.Resealed == 0 || st.Resealed == 300 {
				t.Fatalf("shard %d re-wrapped %d of 300", i, st.Resealed)
			}
			total += st.Resealed
		}
		census, err := s.Census(ctx)
		if err != nil || total != 300 || census.ByKey[e.kr.Primary().ID] != 300 {
			t.Fatalf("re-wrapped %d; census %+v %v", total, census, err)
		}
		if _, err := s.Reseal(ctx, ResealOptions{Shard: 3, Shards: 3}); err == nil {
			t.Fatal("shard 3 of 3 accepted")
		}
	})
}

// TestForgetOverPlantedTombstone: a tombstone a database writer planted
// for a live subject (a forged MAC, or another subject's row moved onto
// it) decides nothing when the service forgets that subject: the forget
// writes its own tombstone over it and counts it, so the subject is
// forgotten by a tombstone that verifies, and a writer who then deletes
// it and puts the key back is caught by the audit. (Found by
// TestDatabaseWriterProperty's seed 17247542765186208199: the forget had
// kept the planted row, counted nothing, and the later deletion went
// unreported.) A forget of a subject already forgotten keeps its
// tombstone and counts nothing.
func TestForgetOverPlantedTombstone(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "a")
		e.insert(t, c, 2, "bob", "b")
		if err := s.Forget(ctx, "carol"); err != nil { // a real tombstone, to move
			t.Fatal(err)
		}
		e.exec(t, fmt.Sprintf(`INSERT INTO %s (namespace, subject, forgotten_at, epoch, mac) VALUES (?, ?, ?, ?, ?)`, e.tombs), "users", "alice", time.Now().Unix(), 1, "v2:00")
		var at, epoch int64
		var mac string
		if err := e.db.QueryRow(e.d.Rebind(fmt.Sprintf(`SELECT forgotten_at, epoch, mac FROM %s WHERE subject = ?`, e.tombs)), "carol").Scan(&at, &epoch, &mac); err != nil {
			t.Fatal(err)
		}
		e.exec(t, fmt.Sprintf(`INSERT INTO %s (namespace, subject, forgotten_at, epoch, mac) VALUES (?, ?, ?, ?, ?)`, e.tombs), "users", "bob", at, epoch, mac)
		_, before, err := s.Audit(ctx)
		if !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("audit with planted tombstones: %v", err)
		}
		keys := e.backup(t, e.keys)
		for _, sub := range []string{"alice", "bob"} {
			if err := s.Forget(ctx, sub); err != nil {
				t.Fatal(err)
			}
			if gone, err := s.IsForgotten(ctx, sub); err != nil || !gone {
				t.Fatalf("%s after a forget over a planted tombstone: forgotten %v, %v", sub, gone, err)
			}
		}
		valid, counted, err := s.Audit(ctx)
		if err != nil || valid != 3 || counted != before+2 {
			t.Fatalf("audit after the forgets: %d valid, %d counted (before %d), %v", valid, counted, before, err)
		}
		if err := s.Forget(ctx, "alice"); err != nil { // again: her own tombstone stays, counted once
			t.Fatal(err)
		}
		if _, again, err := s.Audit(ctx); err != nil || again != counted {
			t.Fatalf("a second forget: %d counted, want %d, %v", again, counted, err)
		}
		// The writer deletes alice's tombstone and puts her key back: her
		// value opens, as SECURITY.md says it may, and the audit says so.
		e.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE subject = ?`, e.tombs), "alice")
		e.restoreRows(t, keys, e.keys, "alice")
		if _, err := e.read(t, c, 1); err != nil {
			t.Fatalf("alice's value with her key put back: %v", err)
		}
		if _, _, err := s.Audit(ctx); !errors.Is(err, ErrTombstoneTampered) {
			t.Fatalf("audit after alice's tombstone was deleted and her key put back: %v", err)
		}
	})
}

// TestIsForgotten: a subject counts as forgotten on a tombstone that
// verifies only; one a database writer planted, with a forged MAC, does
// not make a live subject look forgotten.
func TestIsForgotten(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, time.Minute)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "a")
		e.insert(t, c, 2, "bob", "b")
		if err := s.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Exec(e.d.Rebind(fmt.Sprintf(`INSERT INTO %s (namespace, subject, forgotten_at, epoch, mac) VALUES (?, 'bob', 1, 0, '00')`, e.tombs)), s.Namespace()); err != nil {
			t.Fatal(err)
		}
		for sub, want := range map[string]bool{"alice": true, "bob": false, "carol": false} {
			if got, err := s.IsForgotten(ctx, sub); err != nil || got != want {
				t.Errorf("IsForgotten(%s) = %v, %v", sub, got, err)
			}
		}
	})
}
