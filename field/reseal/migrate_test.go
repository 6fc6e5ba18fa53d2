package reseal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
)

// plainTable creates table (key type keyType, body TEXT) with n plaintext
// rows "message i"; every 50th is NULL and every 70th the empty string.
func plainTable(t *testing.T, d testDB, table, keyType string, n int, key func(i int) any) {
	t.Helper()
	if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id %s PRIMARY KEY, body TEXT)`, table, keyType)); err != nil {
		t.Fatal(err)
	}
	tx, _ := d.db.Begin()
	for i := 1; i <= n; i++ {
		var v any = fmt.Sprintf("message %d", i)
		switch {
		case i%50 == 0:
			v = nil
		case i%70 == 0:
			v = ""
		}
		if _, err := tx.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, body) VALUES (?, ?)`, table)), key(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func wantPlain(i int64) string {
	if i%70 == 0 && i%50 != 0 {
		return ""
	}
	return fmt.Sprintf("message %d", i)
}

// readMixed reads every row through a mixed-mode column and checks each
// value; it returns how many were still plaintext.
func readMixed(t *testing.T, d testDB, col *field.Column, want func(int64) string) (plain int) {
	t.Helper()
	rows, err := d.db.Query(fmt.Sprintf(`SELECT id, body FROM %s ORDER BY id`, col.Table()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	before := col.PlaintextReads()
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		if err := rows.Scan(&id, &ct); err != nil {
			t.Fatal(err)
		}
		if !ct.Valid() {
			if id%50 != 0 {
				t.Fatalf("row %d became NULL", id)
			}
			continue
		}
		s, err := col.OpenString(field.RowInt(id), ct)
		if err != nil || s != want(id) {
			t.Fatalf("row %d: %q, %v", id, s, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return int(col.PlaintextReads() - before)
}

// TestEncryptExisting moves a TEXT column from plaintext to ciphertext with
// several workers while the application writes: the census before counts
// plaintext and flags a value that only looks like a ciphertext; the job
// encrypts every plaintext row, never takes the look-alike for plaintext,
// never overwrites the application's newer values; mixed-mode reads see
// the right value throughout; the census after finds no plaintext.
func TestEncryptExisting(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		table := d.table(t, "plain")
		const n = 3000
		plainTable(t, d, table, "BIGINT", n, func(i int) any { return i })
		app := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text), field.AcceptPlaintext())
		// A plaintext that parses as a ciphertext (another keyring's).
		other, _ := mustColumn(t, newKR(t), table, "body", field.WithEncoding(field.Text)).SealString(field.RowInt(7), "x")
		look, _ := other.Value()
		d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = 7`, table)), look)

		job := &Job{DB: d.db, Dialect: d.dialect, Column: app, Key: "id", BatchSize: 97, FromPlaintext: true, Workers: 3}
		c, err := job.Count(ctx)
		if err != nil || c.Plaintext != n-n/50-1 || c.Suspect != 1 || c.Null != n/50 || c.Done() {
			t.Fatalf("census before: %+v %v", c, err)
		}
		// The application keeps writing (encrypted) while the job runs.
		written := sync.Map{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := int64(rand.IntN(n)+1) | 1 // odd rows: never NULL, never the look-alike
				if id == 7 {
					continue
				}
				v := fmt.Sprintf("edited %d/%d", id, i)
				ct, _ := app.SealString(field.RowInt(id), v)
				if _, err := d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = ?`, table)), ct, id); err == nil {
					written.Store(id, v)
				}
			}
		})
		st, err := job.Run(ctx)
		close(stop)
		wg.Wait()
		if !errors.Is(err, ErrUnreadableRows) || st.Failed != 1 || st.Plaintext == 0 {
			t.Fatalf("job: %+v %v (the look-alike must fail, not be encrypted as plaintext)", st, err)
		}
		want := func(id int64) string {
			if v, ok := written.Load(id); ok {
				return v.(string)
			}
			return wantPlain(id)
		}
		// The operator fixes the look-alike (the census pointed at it).
		fixed, _ := app.SealString(field.RowInt(7), wantPlain(7))
		d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = 7`, table)), fixed)
		if p := readMixed(t, d, app, want); p != 0 {
			t.Fatalf("%d rows still read as plaintext", p)
		}
		after, err := job.Count(ctx)
		if err != nil || after.Plaintext != 0 || after.Suspect != 0 || !after.Done() {
			t.Fatalf("census after: %+v %v", after, err)
		}
		t.Logf("%+v", st)
	})
}

// TestShards splits a job between shards, run at the same time as separate
// jobs: integer keys by range, text keys by hash bucket. Each shard
// touches only its rows; together they finish the table.
func TestShards(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		for _, keys := range []struct {
			typ string
			key func(i int) any
		}{{"BIGINT", func(i int) any { return i }}, {"VARCHAR(40)", func(i int) any { return fmt.Sprintf("user-%05d", i) }}} {
			t.Run(keys.typ, func(t *testing.T) {
				table := d.table(t, "sharded")
				const n, shards = 1000, 3
				plainTable(t, d, table, keys.typ, n, keys.key)
				col := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text))
				job := func(i int) *Job {
					return &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 50, FromPlaintext: true, Shard: i, Shards: shards}
				}
				first, err := job(0).Run(ctx)
				if err != nil || first.Plaintext < n/shards/2 || first.Plaintext > n*2/shards {
					t.Fatalf("shard 0 alone: %+v %v", first, err)
				}
				var wg sync.WaitGroup
				errs := make(chan error, shards)
				for i := range shards {
					wg.Go(func() {
						if _, err := job(i).Run(ctx); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				c, err := (&Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id"}).Count(ctx)
				if err != nil || !c.Done() || c.Rows != n {
					t.Fatalf("census: %+v %v", c, err)
				}
				if _, err := job(3).Run(ctx); err == nil {
					t.Fatal("shard 3 of 3 accepted")
				}
			})
		}
	})
}

// TestRate: a rate-limited job cannot go faster than its limit (the
// limiter's guarantee, so a lower bound that cannot flake): 600 rows at
// 500 rows/s, with a burst of one batch (50), take at least 1.1 s.
func TestRate(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		table := d.table(t, "rated")
		const n = 600
		plainTable(t, d, table, "BIGINT", n, func(i int) any { return i })
		col := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text))
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 50, FromPlaintext: true, Workers: 2, Rate: 500}
		start := time.Now()
		if _, err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < time.Second {
			t.Fatalf("%d rows at 500 rows/s (burst 50) took %v", n, el)
		}
		if c, err := job.Count(context.Background()); err != nil || c.Plaintext != 0 || !c.Done() {
			t.Fatalf("%+v %v", c, err)
		}
		// Resumed over a finished table at 10 rows/s: the rate counts rows
		// rewritten, none here, so the 600 rows read are not throttled
		// (counted as read, they would take a minute).
		job.Rate = 10
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if st, err := job.Run(ctx); err != nil || st.Resealed != 0 || st.Current+st.Null != n {
			t.Fatalf("resumed: %+v %v", st, err)
		}
	})
}

// TestNamesUnknownColumns: a typo in the table, the column, the key or a
// bound column is reported with the names before any work.
func TestNamesUnknownColumns(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		table := d.table(t, "named")
		plainTable(t, d, table, "BIGINT", 3, func(i int) any { return i })
		for _, tc := range []struct {
			table, column, key string
			bind               []string
		}{{table, "bdy", "id", nil}, {table + "x", "body", "id", nil}, {table, "body", "ident", nil}, {table, "body", "id", []string{"owner"}}} {
			var opts []field.ColumnOption
			if tc.bind != nil {
				opts = append(opts, field.Bind(tc.bind...))
			}
			col := mustColumn(t, kr, tc.table, tc.column, opts...)
			_, err := (&Job{DB: d.db, Dialect: d.dialect, Column: col, Key: tc.key}).Count(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.table) || !strings.Contains(err.Error(), tc.column) || !strings.Contains(err.Error(), "--column") {
				t.Errorf("%+v: %v", tc, err)
			}
		}
	})
}

// TestOneJobPerColumn: a job held by a live process elsewhere refuses a
// second one on the same column with ErrJobRunning (main let two run at
// once); an expired lease, or a holder on this host that has died (kill
// -9), does not block a rerun; shards hold locks of their own.
func TestOneJobPerColumn(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		table := d.table(t, "locked")
		plainTable(t, d, table, "BIGINT", 20, func(i int) any { return i })
		col := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text))
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", FromPlaintext: true}
		ctx := context.Background()
		hold := func(holder string, expires time.Time) {
			d.db.Exec("DELETE FROM " + LockTable)
			if _, err := d.db.Exec(d.q("INSERT INTO "+LockTable+" (name, holder, expires) VALUES (?, ?, ?)"), table+".body", holder, expires.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		first, err := job.lock(ctx) // creates the table
		if err != nil {
			t.Fatal(err)
		}
		// Held by a running job of this process: refused.
		if _, err := job.Run(ctx); !errors.Is(err, ErrJobRunning) {
			t.Fatalf("a second job of this process: %v", err)
		}
		first.release()
		hold("another-host:4242", time.Now().Add(time.Minute))
		if _, err := job.Run(ctx); !errors.Is(err, ErrJobRunning) || !strings.Contains(err.Error(), "another-host:4242") {
			t.Fatalf("a second job: %v", err)
		}
		// A database writer's holder: quoted in the error, and never read
		// whole when it is huge.
		hold("evil\x1b[2J", time.Now().Add(time.Minute))
		if _, err := job.Run(ctx); !errors.Is(err, ErrJobRunning) || !strings.Contains(err.Error(), `"evil\x1b[2J"`) {
			t.Fatalf("a holder with control characters: %v", err)
		}
		hold(strings.Repeat("h", 1<<20), time.Now().Add(time.Minute))
		if _, err := job.Run(ctx); !errors.Is(err, ErrJobRunning) || !strings.Contains(err.Error(), "more than 512 bytes") || len(err.Error()) > 1000 {
			t.Fatalf("a huge holder: %.200v", err)
		}
		hold("another-host:4242", time.Now().Add(time.Minute))
		shard := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", FromPlaintext: true, Shard: 0, Shards: 2}
		if _, err := shard.Run(ctx); err != nil {
			t.Fatalf("a shard beside the held column: %v", err)
		}
		hold("another-host:4242", time.Now().Add(-time.Second))
		if _, err := job.Run(ctx); err != nil {
			t.Fatalf("after the lease: %v", err)
		}
		dead := exec.Command("true")
		dead.Run()
		host, _ := os.Hostname()
		hold(fmt.Sprintf("%s:%d", host, dead.Process.Pid), time.Now().Add(time.Minute))
		if _, err := job.Run(ctx); err != nil {
			t.Fatalf("after its holder died on this host: %v", err)
		}
		// Killed but not yet reaped by its parent (a zombie, which
		// signal 0 still reaches): gone, taken over at once.
		if runtime.GOOS == "linux" {
			zombie := exec.Command("sleep", "60")
			if err := zombie.Start(); err != nil {
				t.Fatal(err)
			}
			zombie.Process.Kill()
			for deadline := time.Now().Add(10 * time.Second); !zombieState(zombie.Process.Pid) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			hold(fmt.Sprintf("%s:%d", host, zombie.Process.Pid), time.Now().Add(time.Minute))
			_, err := job.Run(ctx)
			zombie.Wait()
			if err != nil {
				t.Fatalf("after its holder was killed and not yet reaped: %v", err)
			}
		}
		// Left by a job of this process that ended without releasing it
		// (its database connection was lost): taken over at once.
		hold(holderName(), time.Now().Add(time.Minute))
		if _, err := job.Run(ctx); err != nil {
			t.Fatalf("a lock this process's ended job left: %v", err)
		}
		var n int
		d.db.QueryRow("SELECT COUNT(*) FROM " + LockTable).Scan(&n)
		if n != 0 {
			t.Fatalf("%d locks left after the jobs", n)
		}
	})
}

// zombieState is zombie, for the test to wait until the kernel says so.
func zombieState(pid int) bool { return zombie(pid) }

// TestEncryptExistingRefusesDamage: a ciphertext of the keyring cut short
// (as a non-strict MySQL server or a narrow column leaves it) is counted
// as damaged, not plaintext, by the dry run; the migration leaves it as it
// is and fails it, instead of sealing the remnant for good; the column is
// not done while it is there.
func TestEncryptExistingRefusesDamage(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		table := d.table(t, "cut")
		const n = 200
		plainTable(t, d, table, "BIGINT", n, func(i int) any { return i })
		app := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text), field.AcceptPlaintext())
		sealed, _ := app.SealString(field.RowInt(5), "a note that was encrypted once")
		v, _ := sealed.Value()
		s := v.(string)
		cut := s[:3+(len(s)-4)/4*4+1] // its base64 cannot decode
		if _, err := d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = 5`, table)), cut); err != nil {
			t.Fatal(err)
		}
		job := &Job{DB: d.db, Dialect: d.dialect, Column: app, Key: "id", BatchSize: 64, FromPlaintext: true}
		c, err := job.Count(ctx)
		if err != nil || c.Damaged != 1 || c.Plaintext != n-n/50-1 || c.Done() {
			t.Fatalf("census: %+v %v", c, err)
		}
		st, err := job.Run(ctx)
		if !errors.Is(err, ErrUnreadableRows) || st.Failed != 1 || !errors.Is(st.FirstFailure, field.ErrDamaged) || st.Plaintext != n-n/50-1 {
			t.Fatalf("job: %+v %v", st, err)
		}
		var stored string
		if err := d.db.QueryRow(fmt.Sprintf(`SELECT body FROM %s WHERE id = 5`, table)).Scan(&stored); err != nil || stored != cut {
			t.Fatalf("the damaged value was rewritten: %q %v", stored, err)
		}
		after, err := job.Count(ctx)
		if err != nil || after.Damaged != 1 || after.Plaintext != 0 || after.Done() {
			t.Fatalf("census after: %+v %v", after, err)
		}
	})
}
