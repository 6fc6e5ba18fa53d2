package adopt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestConcurrentSignUpsDuringMigration follows the recipe of
// docs/ADOPTING.md ("Unique columns") while the migration runs: 8
// clients sign up 30 new addresses at once (each address by every client,
// in its own case) and 30 addresses of rows written before ward. Each new
// address gets exactly one account, no existing one a second, and at the
// end every row holds a distinct index under the UNIQUE index. The step
// the recipe replaces (UNIQUE on the index after the migration) let both
// sign-ups of one address commit.
func TestConcurrentSignUpsDuringMigration(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		dialect, _ := field.ParseDialect(d.Driver)
		d.DB.Exec(`DROP TABLE IF EXISTS users`)
		t.Cleanup(func() { d.DB.Exec(`DROP TABLE IF EXISTS users`) })
		if err := Seed(ctx, d.DB, dialect, 400); err != nil {
			t.Fatal(err)
		}
		if err := AddIndexColumn(ctx, d.DB, dialect); err != nil {
			t.Fatal(err)
		}
		kr, _ := keyring.New(keyring.AES256GCM)
		app := &App{DB: d.DB, Dialect: dialect}
		if err := app.Adopt(ctx, kr, &ledger.Ledger{DB: d.DB, Dialect: dialect, Table: d.Table(t, "ledger")}, nil); err != nil {
			t.Fatal(err)
		}
		job, err := app.Job()
		if err != nil {
			t.Fatal(err)
		}
		job.BatchSize = 10
		var wg sync.WaitGroup
		var jobErr error
		wg.Go(func() { _, jobErr = job.Run(ctx) })
		won := signUpRace(t, app, 8, 30)
		wg.Wait()
		if jobErr != nil {
			t.Fatal(jobErr)
		}
		for i := range 30 {
			if n := won[fmt.Sprintf("new%d@example.com", i)]; n != 1 {
				t.Errorf("new%d@example.com: %d accounts", i, n)
			}
			if n := won[fmt.Sprintf("user%d@example.com", i*13)]; n != 0 {
				t.Errorf("user%d@example.com, an account before ward: %d more", i*13, n)
			}
		}
		var rows, distinct int
		if err := d.DB.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT email_index) FROM users`).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		if rows != 430 || distinct != rows {
			t.Fatalf("%d rows, %d distinct indexes: want 430 and 430", rows, distinct)
		}
	})
}

// signUpRace runs clients goroutines that each sign up n new addresses and
// n addresses of seeded rows, in their own case, at once; it returns the
// accounts each (lower-cased) address got. Any error but ErrTaken fails t.
func signUpRace(t *testing.T, app *App, clients, n int) map[string]int {
	var mu sync.Mutex
	won := map[string]int{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			<-start
			for i := range n {
				for _, email := range []string{fmt.Sprintf("New%d@Example.com", i), fmt.Sprintf("USER%d@example.com", i*13)} {
					if c%2 == 1 {
						email = strings.ToLower(email)
					}
					_, err := app.AddUser(context.Background(), email, fmt.Sprint("client ", c))
					if err != nil && !errors.Is(err, ErrTaken) {
						t.Errorf("client %d, %s: %v", c, email, err)
						continue
					}
					if err == nil {
						mu.Lock()
						won[strings.ToLower(email)]++
						mu.Unlock()
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return won
}

// TestMigrationRefusesLostUniqueness: the documented migration of a
// UNIQUE column without the unique index over its blind index (the order
// that let duplicates in) is refused before anything is written, naming
// the index to create; without a blind index at all, naming the
// constraint.
func TestMigrationRefusesLostUniqueness(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		dialect, _ := field.ParseDialect(d.Driver)
		d.DB.Exec(`DROP TABLE IF EXISTS users`)
		t.Cleanup(func() { d.DB.Exec(`DROP TABLE IF EXISTS users`) })
		if err := Seed(ctx, d.DB, dialect, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := d.DB.Exec(`ALTER TABLE users ADD COLUMN email_index ` + map[bool]string{true: "VARBINARY(32)", false: d.Blob}[d.Name == "mysql"]); err != nil {
			t.Fatal(err)
		}
		kr, _ := keyring.New(keyring.AES256GCM)
		app := &App{DB: d.DB, Dialect: dialect}
		if err := app.Adopt(ctx, kr, &ledger.Ledger{DB: d.DB, Dialect: dialect, Table: d.Table(t, "ledger")}, nil); err != nil {
			t.Fatal(err)
		}
		job := func() *reseal.Job {
			j, err := app.Job()
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		var ue *reseal.UniquenessError
		_, err := job().Run(ctx)
		if !errors.As(err, &ue) || !errors.Is(err, reseal.ErrUniquenessLost) || strings.Join(ue.Want, ",") != "email_index" {
			t.Fatalf("without the unique index: %v", err)
		}
		noIndex := job()
		noIndex.Index, noIndex.IndexColumn = nil, ""
		if _, err := noIndex.Run(ctx); !errors.As(err, &ue) || ue.Want != nil {
			t.Fatalf("without a blind index: %v", err)
		}
		var plain int
		if err := d.DB.QueryRow(`SELECT COUNT(*) FROM users WHERE email LIKE 'User%'`).Scan(&plain); err != nil || plain != 5 {
			t.Fatalf("%d plaintext rows left, want all 5: %v", plain, err)
		}
		if _, err := d.DB.Exec(`CREATE UNIQUE INDEX users_email_index ON users (email_index)`); err != nil {
			t.Fatal(err)
		}
		if _, err := job().Run(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
