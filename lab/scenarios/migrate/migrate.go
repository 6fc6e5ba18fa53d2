// Package migratelab is the lab scenario "migrate": encrypting a table
// that holds plaintext, online, and rotating it, with ward's job at 1, 2
// and 4 workers and two batch sizes, against the in-database references a
// user might reach for instead (pgcrypto's pgp_sym_encrypt and
// encrypt_iv), and what a rate-limited job does to a concurrent
// application's latency. It runs on a throwaway PostgreSQL cluster when
// initdb is installed, else on SQLite, and says which.
package migratelab

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/pgcluster"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

// Scenario is the "migrate" lab scenario.
type Scenario struct {
	// Rows overrides the table size (0: the profile's).
	Rows int
}

var _ lab.Scenario = Scenario{}

// Name returns "migrate".
func (Scenario) Name() string { return "migrate" }

// Title names the topic.
func (Scenario) Title() string { return "Encrypting existing data online, and rotating it at scale" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "How fast does ward encrypt a table that holds plaintext, and rotate it, with more workers, against pgcrypto in the database, and what does a rate-limited job cost a running application?"
}

// Table sizes per profile (chat-sized text rows).
const (
	FullRows  = 1_000_000
	QuickRows = 10_000
)

// Workers and batch sizes measured.
var (
	Workers    = []int{1, 2, 4}
	BatchSizes = []int{100, 2000}
)

// jobKey names a measured job run.
type jobKey struct {
	job     string // "encrypt-existing" or "rotate"
	workers int
	batch   int
}

func (k jobKey) name() string {
	return fmt.Sprintf("%s/workers-%d/batch-%d", k.job, k.workers, k.batch)
}

func (k jobKey) params() map[string]any {
	return map[string]any{"job": k.job, "workers": k.workers, "batch": k.batch}
}

// Reference jobs in the database (PostgreSQL only).
const (
	pgpSym    = "pgcrypto/pgp_sym_encrypt"
	encryptIV = "pgcrypto/encrypt_iv-aes-cbc"
)

// Application latency cases.
const (
	appAlone  = "app-loop/alone"
	appDuring = "app-loop/during-job-at-25pct"
	appRatio  = "app-loop/p95-during-vs-alone"
	dbCase    = "database"
)

// env is one run's database and keyring.
type env struct {
	db      *sql.DB
	dialect field.Dialect
	kr      *keyring.Keyring
	rows    int
	name    string // "postgresql", "sqlite" or "mariadb"
	prefix  string // of the case names: "" or "mariadb/"
}

// Run measures every job and the application loop.
func (s Scenario) Run(ctx context.Context, le *lab.Env) error {
	e, stop, err := s.open(ctx, le)
	if err != nil {
		return err
	}
	defer stop()
	le.Record(lab.Derived("migrate", dbCase, map[string]any{"database": e.name}, "rows", "rows", float64(e.rows), "database and table size of this run"))
	total, done := 2*len(Workers)+len(BatchSizes)+2, 0
	step := func() { done++; le.Progress(done, total) }
	var base float64
	for _, w := range Workers {
		r, err := e.encryptExisting(ctx, jobKey{"encrypt-existing", w, 500})
		if err != nil {
			return err
		}
		le.Record(r...)
		if w == 1 {
			base = r[0].Median
			if err := e.keepSealed(ctx); err != nil {
				return err
			}
		}
		step()
	}
	for _, b := range BatchSizes {
		r, err := e.encryptExisting(ctx, jobKey{"encrypt-existing", 2, b})
		if err != nil {
			return err
		}
		le.Record(r...)
		step()
	}
	for _, w := range Workers {
		r, err := e.rotate(ctx, jobKey{"rotate", w, 500})
		if err != nil {
			return err
		}
		le.Record(r...)
		step()
	}
	le.Record(e.references(ctx)...)
	step()
	r, err := e.appLatency(ctx, base/4)
	if err != nil {
		return err
	}
	le.Record(r...)
	step()
	return s.onMariaDB(ctx, le, e)
}

// open starts PostgreSQL, or falls back to SQLite, and makes a keyring.
func (s Scenario) open(ctx context.Context, le *lab.Env) (*env, func(), error) {
	e := &env{rows: s.Rows}
	if e.rows == 0 {
		e.rows = FullRows
		if le.Quick {
			e.rows = QuickRows
		}
	}
	var err error
	if e.kr, err = keyring.New(keyring.AES256GCM); err != nil {
		return nil, nil, err
	}
	if pgcluster.Available() {
		c, err := pgcluster.Start(ctx, "")
		if err != nil {
			return nil, nil, err
		}
		e.db, _, err = dburl.Open(c.URL)
		if err != nil {
			c.Stop()
			return nil, nil, err
		}
		e.dialect, e.name = field.Postgres, "postgresql"
		e.db.SetMaxOpenConns(16)
		return e, func() { e.db.Close(); c.Stop() }, nil
	}
	fmt.Fprintln(le.Log, "migrate: initdb not found (apt-get install postgresql): measuring on SQLite")
	dir, err := os.MkdirTemp("", "ward-migrate-")
	if err != nil {
		return nil, nil, err
	}
	if e.db, _, err = dburl.Open("sqlite:" + filepath.Join(dir, "migrate.db")); err != nil {
		return nil, nil, err
	}
	e.dialect, e.name = field.SQLite, "sqlite"
	return e, func() { e.db.Close(); os.RemoveAll(dir) }, nil
}

// elapsedRate turns a job's duration into rows per second.
func elapsedRate(rows int, d time.Duration) float64 { return float64(rows) / d.Seconds() }
