// Package recordedtest is the scenario every ORM adapter's recorded
// blind index is tested with (their TestRecordedIndex): a table of
// members whose e-mail is sealed and indexed, seeded with a v1 index,
// recorded with FromV1, re-keyed to v2 and — after a rotation — to the
// next epoch while clients sign up and log in; then every address has one
// member, found, and every stored index is under the current epoch in the
// current column with the other column empty.
package recordedtest

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// Table and Column name the members' table (App.Table, by default) and
// its sealed, indexed column; the seeded members have IDs s0, s1, ….
const Table, Column = "members", "email"

// App is one adapter process under test, registered in its fleet.
type App struct {
	// Table is the members' table (Join: Table).
	Table string
	KR    *keyring.Keyring
	D     lifecycle.Database
	Opts  lifecycle.ReindexOptions
	// Find returns the ID of the member with address email: "" for
	// none, "found <address>" for a member with another address.
	Find func(email string) (string, error)
	// SignUp is client c's i-th sign-up (of address New<i*2+c/2>@…, so
	// that two clients try each address at once), through the adapter's
	// write paths; it returns the addresses the members it wrote end with.
	SignUp func(ctx context.Context, c, i int) ([]string, error)
	// Refresh re-reads the adapter's record of the index.
	Refresh func(ctx context.Context) error
}

// Adapter is what Join needs of an adapter: recording its index in the
// database's ledger, and following re-keys.
type Adapter struct {
	Record func(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions) error
	Watch  func(ctx context.Context, every time.Duration)
}

// Join adopts db as a database of kr (one keyring serves a database per
// subtest, as an operator adopts a new one), records the adapter's index
// with FromV1, registers the process in the fleet and follows re-keys
// until the test ends.
func Join(t *testing.T, db *sql.DB, dialect field.Dialect, kr *keyring.Keyring, a Adapter) *App {
	t.Helper()
	ctx := context.Background()
	lg := &ledger.Ledger{DB: db, Dialect: dialect}
	if _, err := lg.Adopt(ctx, kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
		t.Fatal(err)
	}
	gate := fleetgate.New()
	if err := a.Record(ctx, lg, ledger.IndexerOptions{Gate: gate, FromV1: true}); err != nil {
		t.Fatal(err)
	}
	reg := &fleet.Registry{DB: db, Dialect: dialect, Ledger: lg, Gate: gate}
	m, err := reg.Join(ctx, kr, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go a.Watch(wctx, 20*time.Millisecond)
	t.Cleanup(func() { cancel(); m.Leave(context.Background()) })
	return &App{Table: Table, KR: kr, D: lifecycle.Database{Name: dialect.String(), DB: db, Dialect: dialect, Ledger: lg},
		Opts: lifecycle.ReindexOptions{Fleet: fleet.WaitOptions{Poll: 20 * time.Millisecond}, Wait: time.Minute}}
}

// Seeded are the addresses of the n seeded members (member i is "s<i>").
func Seeded(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Seed%d@Example.com", i)
	}
	return out
}

// MustFind fails the test unless email finds member id ("" for none).
func (a *App) MustFind(t *testing.T, email, id string) {
	t.Helper()
	if got, err := a.Find(email); err != nil || got != id {
		t.Fatalf("%s: found %q, %v; want %s", email, got, err, id)
	}
}

// Run runs the scenario over the seeded members: each found; re-keyed
// away from v1, rotated, re-keyed again, while 4 clients sign up and log
// the seeded members in; then Check. It returns how many addresses were
// signed up meanwhile.
func (a *App) Run(t *testing.T, seeded []string) int {
	t.Helper()
	for i, e := range seeded {
		a.MustFind(t, e, fmt.Sprintf("s%d", i))
	}
	stop := make(chan struct{})
	missed, wait := a.traffic(t, seeded, stop)
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	})
	e1 := a.rekey(t, 0)
	if _, err := lifecycle.Rotate(context.Background(), a.KR, []lifecycle.Database{a.D}, lifecycle.RotateOptions{Wait: time.Minute, Fleet: a.Opts.Fleet}); err != nil {
		t.Fatal(err)
	}
	a.rekey(t, e1)
	close(stop)
	signed := wait()
	if n := missed.Load(); n > 0 {
		t.Fatalf("%d log-ins found nobody or someone else during the re-keys", n)
	}
	if len(signed) == 0 {
		t.Fatal("no sign-up succeeded during the re-keys")
	}
	a.Check(t, append(seeded, signed...))
	return len(signed)
}

// traffic signs up new members and logs the seeded ones in until stop
// closes; wait returns the addresses signed up.
func (a *App) traffic(t *testing.T, seeded []string, stop chan struct{}) (missed *atomic.Int64, wait func() []string) {
	missed = &atomic.Int64{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var signed []string
	for c := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := (i*7 + c) % len(seeded)
				if id, err := a.Find(seeded[n]); err == nil && id != fmt.Sprintf("s%d", n) {
					missed.Add(1)
					t.Errorf("log-in of %s found %q", seeded[n], id)
				}
				time.Sleep(time.Millisecond) // SQLite's writers would starve the re-key's
				if emails, err := a.SignUp(context.Background(), c, i); err == nil {
					mu.Lock()
					signed = append(signed, emails...)
					mu.Unlock()
				}
			}
		})
	}
	return missed, func() []string { wg.Wait(); return signed }
}

// rekey re-keys the index away from epoch from, checks the result and
// returns the new epoch.
func (a *App) rekey(t *testing.T, from keyring.KeyID) keyring.KeyID {
	t.Helper()
	res, err := lifecycle.Reindex(context.Background(), a.KR, a.D, a.Table, Column, "", a.Opts)
	if err != nil || res.From != from || res.To != a.KR.Primary().ID || res.Index.Rekey != nil {
		t.Fatalf("re-key from %v: %+v %v", from, res, err)
	}
	return res.To
}

// Check: every address has one member, found; every stored index is v2
// under the current epoch in the current column, the other column NULL.
func (a *App) Check(t *testing.T, emails []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := lifecycle.Reindex(ctx, a.KR, a.D, a.Table, Column, "", a.Opts); err != nil {
		t.Fatal(err) // clears a write in flight across the switch
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.D.Ledger.Verified(ctx, a.KR)
	if err != nil || len(st.Indexes) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	cur, other := st.Indexes[0].Columns()
	n, err := a.checkRows(ctx, cur, other)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range emails {
		if !seen[e] {
			seen[e] = true
			if id, err := a.Find(e); err != nil || id == "" {
				t.Fatalf("%s: %q %v", e, id, err)
			}
		}
	}
	if n != len(seen) {
		t.Fatalf("%d members for %d addresses", n, len(seen))
	}
}

// checkRows checks every row's index columns and counts the rows.
func (a *App) checkRows(ctx context.Context, cur, other string) (int, error) {
	rows, err := a.D.DB.QueryContext(ctx, fmt.Sprintf("SELECT id, %s, %s FROM %s", cur, other, a.Table))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var v, o []byte
		if err := rows.Scan(&id, &v, &o); err != nil {
			return n, err
		}
		if epoch, err := field.IndexEpoch(v); err != nil || epoch != a.KR.Primary().ID || o != nil {
			return n, fmt.Errorf("member %s: index %x (epoch %v, %v), other column %x", id, v, epoch, err, o)
		}
		n++
	}
	return n, rows.Err()
}
