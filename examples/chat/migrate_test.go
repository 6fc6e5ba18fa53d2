package chat

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// Processes starting at once apply each migration exactly once: on a
// fresh database, and on one a release behind (its last two migrations,
// CREATE INDEX statements that fail if run twice, not yet applied). Each
// goroutine opens its own database handle, as a process would.
func TestConcurrentMigrate(t *testing.T) {
	forEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		run := func() {
			t.Helper()
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for range 6 {
				wg.Go(func() {
					db, dialect, err := openDB(url, true)
					if err == nil {
						err = migrate(ctx, db, dialect)
						db.Close()
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		db, _, err := openDB(url, true)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		check := func() {
			t.Helper()
			var rows, n int
			if err := db.QueryRow(`SELECT COUNT(*), MAX(n) FROM schema_version`).Scan(&rows, &n); err != nil {
				t.Fatal(err)
			}
			if rows != 1 || n != len(migrations) {
				t.Fatalf("schema_version: %d rows, n = %d; want 1 row, n = %d", rows, n, len(migrations))
			}
		}
		run()
		check()
		// A release behind: the last four migrations undone.
		drop := []string{`DROP TABLE access_log`, `DROP INDEX users_email_idx2`, `ALTER TABLE users DROP COLUMN email_idx2`}
		if strings.HasPrefix(url, "mysql:") {
			drop[1] = `DROP INDEX users_email_idx2 ON users`
		}
		for _, q := range append(drop, `UPDATE schema_version SET n = n - 4`) {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		run()
		check()
	})
}

// A database writer who deletes schema_version or lowers its count makes
// the schema steps re-run: the start fails, and the transaction leaves the
// database as it was (the sessions table is not emptied by migration 10,
// which ran before migration 11 failed). Putting the count back restores
// the start.
func TestSchemaVersionWriter(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		c := ta.client(t)
		c.signup("ann@example.com")
		sessions := func() int {
			var n int
			if err := ta.db.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := sessions()
		if before == 0 {
			t.Fatal("no session to lose")
		}
		for _, tamper := range []string{`DELETE FROM schema_version`, `UPDATE schema_version SET n = 9`} {
			if _, err := ta.db.Exec(tamper); err != nil {
				t.Fatal(err)
			}
			if s, err := Open(ctx, ta.cfg); err == nil {
				s.Close()
				t.Fatalf("after %q: the service started", tamper)
			}
			if n := sessions(); n != before {
				t.Fatalf("after %q: %d sessions, had %d: a failed start changed the database", tamper, n, before)
			}
			if _, err := ta.db.Exec(`DELETE FROM schema_version`); err != nil {
				t.Fatal(err)
			}
			if _, err := ta.db.Exec(fmt.Sprintf(`INSERT INTO schema_version (n) VALUES (%d)`, len(migrations))); err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, ta.cfg)
			if err != nil {
				t.Fatalf("with the count put back: %v", err)
			}
			s.Close()
		}
	})
}

// TestExistingWardDatabase: the chat on a database that already serves
// ward under the same keyring (its ledger recorded by a ward job on another
// table) but holds no chat row starts at once, with nothing to migrate (it
// asked for 'ward-chat migrate'); one holding a chat row from before
// values were bound still does.
func TestExistingWardDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(), Log: failureLog(t), Limits: testLimits}
	kr, err := keyring.Create(ctx, cfg.KeyringPath, cfg.KeyService, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	db, dialect, err := openDB(cfg.DB, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := (&ledger.Ledger{DB: db, Dialect: dialect}).Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(ctx, cfg); !errors.Is(err, ErrInitialised) {
		t.Fatalf("init on the database its keyring serves: %v", err)
	}
	app, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open on a ward database without chat rows: %v", err)
	}
	app.Close()

	dir = t.TempDir()
	cfg.DB, cfg.KeyringPath = "sqlite:"+filepath.Join(dir, "chat.db"), filepath.Join(dir, "kr.json")
	if kr, err = keyring.Create(ctx, cfg.KeyringPath, cfg.KeyService, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	old, dialect, err := openDB(cfg.DB, true)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := migrate(ctx, old, dialect); err != nil {
		t.Fatal(err)
	}
	if err := (&ledger.Ledger{DB: old, Dialect: dialect}).Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`INSERT INTO users (id, email, email_idx, password, created) VALUES (1, x'00', x'00', 'y', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, cfg); !errors.Is(err, ErrNeedsMigration) {
		t.Fatalf("open on a database with a chat row from before binding: %v", err)
	}
}
