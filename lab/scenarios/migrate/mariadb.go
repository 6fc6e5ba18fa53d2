package migratelab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/myserver"
	"github.com/wardlab/ward/lab"
)

// On MariaDB: the same jobs' case names with this prefix, and MariaDB's
// own AES_ENCRYPT as the in-database reference. In MariaDB 10.11 it is
// AES-128 in ECB mode (no IV: equal plaintexts give equal ciphertexts, and
// nothing authenticates them), its key folded to 16 bytes.
const (
	mariaPrefix = "mariadb/"
	aesEncrypt  = mariaPrefix + "AES_ENCRYPT-aes-128-ecb"
	mariaCase   = mariaPrefix + "database"
)

// onMariaDB runs the encryption and rotation jobs at one and four workers
// and the AES_ENCRYPT reference on a throwaway MariaDB server, when Debian's
// mariadb-server is installed, with the keyring and row count of base.
func (s Scenario) onMariaDB(ctx context.Context, le *lab.Env, base *env) error {
	if !myserver.Available() {
		le.Record(lab.Unavailable("migrate", aesEncrypt, lab.SourceReference, myserver.ErrMissing))
		return nil
	}
	srv, err := myserver.Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	db, _, err := dburl.Open(srv.URL())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(16)
	e := &env{db: db, dialect: field.MySQL, kr: base.kr, rows: base.rows, name: "mariadb", prefix: mariaPrefix}
	le.Record(lab.Derived("migrate", mariaCase, map[string]any{"database": "mariadb"}, "rows", "rows", float64(e.rows), "database and table size of this run"))
	for _, k := range []jobKey{{"encrypt-existing", 1, 500}, {"encrypt-existing", Workers[len(Workers)-1], 500}, {"rotate", 1, 500}} {
		run := e.encryptExisting
		if k.job == "rotate" {
			run = e.rotate
		}
		r, err := run(ctx, k)
		if err != nil {
			return err
		}
		le.Record(r...)
	}
	r, err := e.aesEncrypt(ctx)
	if err != nil {
		r = lab.Unavailable("migrate", aesEncrypt, lab.SourceReference, err)
	}
	le.Record(r)
	return nil
}

// aesEncrypt times MariaDB's AES_ENCRYPT updating the whole table in one
// statement, into a LONGBLOB column.
func (e *env) aesEncrypt(ctx context.Context) (lab.Result, error) {
	if err := e.load(ctx); err != nil {
		return lab.Result{}, err
	}
	if _, err := e.db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN enc LONGBLOB"); err != nil {
		return lab.Result{}, err
	}
	start := time.Now()
	if _, err := e.db.ExecContext(ctx, "UPDATE "+table+" SET enc = AES_ENCRYPT(body, ?)", "ward lab key, not a secret"); err != nil {
		return lab.Result{}, err
	}
	r := lab.Derived("migrate", aesEncrypt, map[string]any{"job": aesEncrypt}, "rows_per_second", "rows/s", elapsedRate(e.rows, time.Since(start)),
		"one UPDATE over the whole table: AES-128-ECB (no IV, no authentication), one long transaction, the key in the statement's parameters")
	r.Source = lab.SourceReference
	return r, nil
}

// insertMany loads MariaDB with multi-row INSERTs of 500 rows, each batch
// its own transaction.
func (e *env) insertMany(ctx context.Context) error {
	const batch = 500
	for from := 1; from <= e.rows; from += batch {
		to := min(from+batch-1, e.rows)
		var b strings.Builder
		args := make([]any, 0, 2*(to-from+1))
		for i := from; i <= to; i++ {
			if i > from {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?)")
			args = append(args, i, message(i))
		}
		if _, err := e.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, body) VALUES %s", table, b.String()), args...); err != nil {
			return fmt.Errorf("loading MariaDB: %w", err)
		}
	}
	return nil
}
