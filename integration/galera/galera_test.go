// Package galera tests ward on a three-node MariaDB Galera cluster: causal
// reads required at start, compare-and-swaps that lose certification on
// another node retried, and one node killed in the middle of an online
// encryption and of forgets, the job resumed on another node.
package galera

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

const (
	notes = 1200 // rows encrypted online while a node dies
	users = 30   // subjects with keys; the first forgotten ones on two nodes at once
	gone  = 12
)

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if !available() {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(errMissing)
		}
		t.Skip(errMissing)
	}
	c, err := launch(context.Background())
	for attempt := 1; attempt < 3 && portTaken(err); attempt++ {
		t.Logf("a port was taken between the check and the start: launching again (%v)", err)
		c, err = launch(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// portTaken reports whether err is a node's failure to bind its port.
func portTaken(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "bind on tcp/ip port")
}

func open(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, _, err := dburl.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// node is what a service on one node uses.
type node struct {
	db    *sql.DB
	lg    *ledger.Ledger
	users *subject.Store
}

func onNode(t *testing.T, c *cluster, i int, kr *keyring.Keyring) *node {
	t.Helper()
	n := &node{db: open(t, c.URL(i, "wsrep_sync_wait=1"))}
	n.lg = &ledger.Ledger{DB: n.db, Dialect: field.MySQL}
	var err error
	if n.users, err = subject.Open(context.Background(), subject.Config{DB: n.db, Dialect: field.MySQL, Keyring: kr, Ledger: n.lg, Namespace: "users", TTL: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGaleraNodeLoss: ward refuses a node that reads without waiting for
// the cluster; forgets on two nodes at once all land (certification
// failures retried); node 0 is killed while an online encryption runs on
// it and forgets run on node 1; the job resumes on node 1; then a fleet
// rotation runs on the two nodes left. Read on node 2: 0 rows lost, 0
// unreadable, 0 forgotten users readable, the ledger checks everywhere.
func TestGaleraNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := startCluster(t)
	ctx := context.Background()
	dir := t.TempDir()
	kr, err := keyring.Create(ctx, filepath.Join(dir, "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	loose := &ledger.Ledger{DB: open(t, c.URL(0, "")), Dialect: field.MySQL}
	if err := loose.Record(ctx, kr); !errors.Is(err, ledger.ErrNoCausalReads) {
		t.Fatalf("a node without wsrep_sync_wait: %v", err)
	}
	n0, n1 := onNode(t, c, 0, kr), onNode(t, c, 1, kr)
	if err := n0.lg.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	// What a service says at start on a node: Galera, not SQLite.
	if rep, err := ledger.InspectReplication(ctx, n0.db, field.MySQL); err != nil || !rep.Galera {
		t.Fatalf("a Galera node inspected: %+v %v", rep, err)
	} else if line, warn := rep.Summary(false); warn || !strings.Contains(line, "Galera cluster") {
		t.Fatalf("a Galera node's durability line: %q", line)
	}
	seed(t, n0, kr)
	forgetAtOnce(t, n0, n1)

	col, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text))
	if err := n0.lg.RecordColumns(ctx, kr, ledger.ColumnOf(col, "id")); err != nil {
		t.Fatal(err)
	}
	job := func(n *node) *reseal.Job {
		return &reseal.Job{DB: n.db, Dialect: field.MySQL, Column: col, Key: "id", FromPlaintext: true, BatchSize: 50, Pause: 15 * time.Millisecond}
	}
	done := make(chan error, 1)
	go func() { _, err := job(n0).Run(ctx); done <- err }()
	waitFor(t, n1.db, fmt.Sprintf("SELECT COUNT(*) >= %d FROM notes WHERE body LIKE 'w4:%%'", notes/4))
	forgets := make(chan error, 1)
	go func() { forgets <- forget(ctx, n1, users/2, users/2+gone/2) }()
	time.Sleep(20 * time.Millisecond)
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("the job on the killed node finished")
	}
	if err := <-forgets; err != nil {
		t.Fatalf("forgets on node 1 while node 0 died: %v", err)
	}
	st, err := job(n1).Run(ctx)
	if err != nil || st.Plaintext == 0 || st.Plaintext >= notes {
		t.Fatalf("the job resumed on node 1: %+v %v", st, err)
	}
	n2 := onNode(t, c, 2, kr)
	rotate(t, kr, n1, n2)
	check(t, n2, col, kr)
	// Node 1 killed too: node 2, alone of the two, is outside the primary
	// component. The ledger is not read there, and says why in a typed
	// error (not as a wrong keyring file).
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	notReady(t, n2, kr)
}

// notReady waits until node n, cut off from the primary component, refuses
// the ledger's read with ledger.ErrNodeNotReady (Galera error 1047).
func notReady(t *testing.T, n *node, kr *keyring.Keyring) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = n.lg.Verified(ctx, kr)
		cancel()
		if errors.Is(err, ledger.ErrNodeNotReady) {
			return
		}
	}
	t.Fatalf("a node outside the primary component: %v", err)
}

// seed makes the notes (plaintext) and the users' keys on node 0.
func seed(t *testing.T, n *node, kr *keyring.Keyring) {
	t.Helper()
	if _, err := n.db.Exec("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	args := []any{}
	for i := 1; i <= notes; i++ {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
		args = append(args, i, fmt.Sprint("note ", i))
	}
	if _, err := n.db.Exec("INSERT INTO notes VALUES "+b.String(), args...); err != nil {
		t.Fatal(err)
	}
	for i := range users {
		if _, err := n.users.SealingKey(fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// forgetAtOnce forgets the first gone/2 users, half through each node at
// the same time: each forget counts in the ledger, so the two nodes'
// compare-and-swaps meet in certification.
func forgetAtOnce(t *testing.T, a, b *node) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- forget(context.Background(), a, 0, gone/4) })
	wg.Go(func() { errs <- forget(context.Background(), b, gone/4, gone/2) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("forgets on two nodes at once: %v", err)
		}
	}
}

func forget(ctx context.Context, n *node, from, to int) error {
	for i := from; i < to; i++ {
		if err := n.users.Forget(ctx, fmt.Sprint("u", i)); err != nil {
			return fmt.Errorf("u%d: %w", i, err)
		}
	}
	return nil
}

// rotate runs a fleet rotation through node 2 with a process registered
// on each of the two nodes left.
func rotate(t *testing.T, kr *keyring.Keyring, a, b *node) {
	t.Helper()
	ctx := context.Background()
	for _, n := range []*node{a, b} {
		m, err := (&fleet.Registry{DB: n.db, Dialect: field.MySQL}).Join(ctx, kr, 50*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Leave(context.Background()) })
	}
	r, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{{Name: "galera", DB: b.db, Dialect: field.MySQL, Ledger: b.lg}}, lifecycle.RotateOptions{Wait: time.Minute})
	if err != nil || !r.Promoted || len(r.Columns) != 1 {
		t.Fatalf("rotate: %+v %v", r, err)
	}
}

// check reads everything back on node n.
func check(t *testing.T, n *node, col *field.Column, kr *keyring.Keyring) {
	t.Helper()
	ctx := context.Background()
	rows, err := n.db.Query("SELECT id, body FROM notes ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var count, unreadable, stale int
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		if err := rows.Scan(&id, &ct); err != nil {
			t.Fatal(err)
		}
		count++
		got, err := col.OpenString(field.RowInt(id), ct)
		if err != nil || got != fmt.Sprint("note ", id) {
			unreadable++
		} else if k, _ := ct.KeyID(); k != kr.Primary().ID {
			stale++
		}
	}
	if count != notes || unreadable != 0 || stale != 0 {
		t.Fatalf("on node 2: %d rows (want %d), %d unreadable, %d not under the new key", count, notes, unreadable, stale)
	}
	var wrong []string
	for i := range users {
		u := fmt.Sprint("u", i)
		forgotten := i < gone/2 || i >= users/2 && i < users/2+gone/2
		isGone, err := n.users.IsForgotten(ctx, u)
		_, kerr := n.users.SealingKey(u)
		if err != nil || isGone != forgotten || forgotten && kerr == nil {
			wrong = append(wrong, fmt.Sprintf("%s (forgotten %v: tombstone %v %v, key error %v)", u, forgotten, isGone, err, kerr))
		}
	}
	if len(wrong) != 0 {
		t.Fatalf("users on node 2 not as acknowledged: %s", strings.Join(wrong, "; "))
	}
	if err := n.lg.Check(ctx, kr); err != nil {
		t.Fatalf("the ledger on node 2: %v", err)
	}
}

func waitFor(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var ok bool
		if err := db.QueryRow(query).Scan(&ok); err == nil && ok {
			return
		}
	}
	t.Fatalf("still false after a minute: %s", query)
}
