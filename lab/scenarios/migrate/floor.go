package migratelab

import (
	"context"
	"fmt"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/lab"
)

// The job's floor on PostgreSQL: the database writing a job's own output
// (the sealed values an encrypt-existing run left) back over the
// plaintext table in the job's batches, one transaction each, with no
// client work in between. No job that reads, seals and compares-and-swaps
// each row can write faster on this database and disk; the lab's cluster
// keeps PostgreSQL's defaults, fsync on.
const (
	sealedTable = "migrate_sealed"
	dbUpdate    = "postgresql/update-in-batches"
	floorBatch  = 500
)

// keepSealed copies the table's values, as a job left them, for floor
// (PostgreSQL only: elsewhere it does nothing).
func (e *env) keepSealed(ctx context.Context) error {
	if e.dialect != field.Postgres {
		return nil
	}
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + sealedTable,
		"CREATE TABLE " + sealedTable + " AS SELECT id, body FROM " + table,
		"ALTER TABLE " + sealedTable + " ADD PRIMARY KEY (id)",
	} {
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("migrate: keeping the sealed values: %w", err)
		}
	}
	return nil
}

// floor reloads the plaintext and has the database write the kept sealed
// values over it, floorBatch rows per statement and transaction.
func (e *env) floor(ctx context.Context) (lab.Result, error) {
	if err := e.load(ctx); err != nil {
		return lab.Result{}, err
	}
	q := "UPDATE " + table + " m SET body = s.body FROM " + sealedTable + " s WHERE s.id = m.id AND m.id > $1 AND m.id <= $2"
	var written int64
	start := time.Now()
	for lo := 0; lo < e.rows; lo += floorBatch {
		res, err := e.db.ExecContext(ctx, q, lo, lo+floorBatch)
		if err != nil {
			return lab.Result{}, fmt.Errorf("migrate: the database's own update: %w", err)
		}
		n, _ := res.RowsAffected()
		written += n
	}
	el := time.Since(start)
	if written != int64(e.rows) {
		return lab.Result{}, fmt.Errorf("migrate: the database's own update wrote %d of %d rows", written, e.rows)
	}
	r := lab.Derived("migrate", dbUpdate, map[string]any{"job": "update", "batch": floorBatch}, "rows_per_second", "rows/s", elapsedRate(e.rows, el),
		fmt.Sprintf("the database writing an encrypt-existing job's sealed values back over the plaintext, %d rows per UPDATE and transaction, nothing done in the client: the job's floor", floorBatch))
	r.Source = lab.SourceReference
	return r, nil
}
