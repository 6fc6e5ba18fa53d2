package migratelab

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

const table = "migrate_msgs"

var words = strings.Fields(`the a of to and in is it you that he was for on are with as I his they be at one have this from
or had by word but what some we can out other were all there when up use your how said an each she which do their time if
will way about many then them write would like so these her long make thing see him two has look more day could go come
did number sound no most people my over know water than call first who may down side been now find any new work part take
get place made live where after back little only round man year came show every good me give our under name very through
just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does
set three want air well also play small end put home read hand port large spell add even land here must big high such`)

// message returns a chat-sized message (about 500 characters) for row i.
func message(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	var b strings.Builder
	for b.Len() < 480 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return fmt.Sprintf("%d: %s", i, b.String())
}

// load (re)creates the table with n plaintext messages.
func (e *env) load(ctx context.Context) error {
	e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
	if _, err := e.db.ExecContext(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, body TEXT)"); err != nil {
		return fmt.Errorf("reseal: %w", err)
	}
	switch e.dialect {
	case field.Postgres:
		return e.copyIn(ctx)
	case field.MySQL:
		return e.insertMany(ctx)
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO "+table+" (id, body) VALUES (?, ?)")
	if err != nil {
		tx.Rollback()
		return err
	}
	for i := 1; i <= e.rows; i++ {
		if _, err := stmt.ExecContext(ctx, i, message(i)); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// copyIn loads PostgreSQL with COPY.
func (e *env) copyIn(ctx context.Context) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		i := 0
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{table}, []string{"id", "body"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i >= e.rows {
					return nil, nil
				}
				i++
				return []any{int64(i), message(i)}, nil
			}))
		if err == nil {
			_, err = dc.(*stdlib.Conn).Conn().Exec(ctx, "ANALYZE "+table)
		}
		return err
	})
}

func (e *env) column(opts ...field.ColumnOption) (*field.Column, error) {
	return field.NewColumn(e.kr, table, "body", append([]field.ColumnOption{field.WithEncoding(field.Text)}, opts...)...)
}

// runJob runs a job and records its throughput per window of progress
// (rows/s), overall rows/s, and how busy the machine's CPUs were.
func (e *env) runJob(ctx context.Context, k jobKey, job *reseal.Job) ([]lab.Result, error) {
	var windows []float64
	last, lastRows := time.Now(), 0
	job.Progress = func(p reseal.Progress) {
		if now := time.Now(); p.Scanned-lastRows >= max(e.rows/20, job.BatchSize) {
			windows = append(windows, float64(p.Scanned-lastRows)/now.Sub(last).Seconds())
			last, lastRows = now, p.Scanned
		}
	}
	cpu0, own0, start := lab.ReadLoad(), lab.ProcessCPU.Read(), time.Now()
	st, err := job.Run(ctx)
	el, cpu, own := time.Since(start), lab.ReadLoad().BusySince(cpu0), lab.ProcessCPU.Read()-own0
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", k.name(), err)
	}
	if st.Resealed != e.rows {
		return nil, fmt.Errorf("migrate %s: %d of %d rows written", k.name(), st.Resealed, e.rows)
	}
	p, name := k.params(), e.prefix+k.name()
	total := lab.Derived("migrate", name, p, "rows_per_second", "rows/s", elapsedRate(e.rows, el), "rows over the job's wall time")
	return []lab.Result{total,
		lab.FromSamples("migrate", name, p, "window_rows_per_second", "rows/s", windows),
		lab.Derived("migrate", name, p, "cpu_busy", "%", cpu*100, "share of all cores busy during the job (this process and the database)"),
		lab.Derived("migrate", name, p, "cpu_per_1000_rows", "ms", own.Seconds()*1e6/float64(e.rows),
			"ward's own CPU time per 1,000 rows (the job's process, every thread; the database's work not counted)")}, nil
}

// encryptExisting loads plaintext and encrypts it.
func (e *env) encryptExisting(ctx context.Context, k jobKey) ([]lab.Result, error) {
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	col, err := e.column()
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, k, &reseal.Job{DB: e.db, Dialect: e.dialect, Column: col, Key: "id", FromPlaintext: true, Workers: k.workers, BatchSize: k.batch})
}

// rotate adds a primary key and re-encrypts the (encrypted) table.
func (e *env) rotate(ctx context.Context, k jobKey) ([]lab.Result, error) {
	if _, err := keyring.NewManager(e.kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
		return nil, err
	}
	col, err := e.column()
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, k, &reseal.Job{DB: e.db, Dialect: e.dialect, Column: col, Key: "id", Workers: k.workers, BatchSize: k.batch})
}

// references times pgcrypto updating the whole table in one statement,
// into a bytea column, the way a user might encrypt a column in SQL.
func (e *env) references(ctx context.Context) []lab.Result {
	if e.dialect != field.Postgres {
		err := fmt.Errorf("pgcrypto runs inside PostgreSQL, which this run did not have (apt-get install postgresql)")
		return []lab.Result{lab.Unavailable("migrate", pgpSym, lab.SourceReference, err), lab.Unavailable("migrate", encryptIV, lab.SourceReference, err)}
	}
	passphrase := "ward lab passphrase, not a secret"
	key, iv := make([]byte, 32), make([]byte, 16)
	var out []lab.Result
	if r, err := e.floor(ctx); err != nil {
		out = append(out, lab.Unavailable("migrate", dbUpdate, lab.SourceReference, err))
	} else {
		out = append(out, r)
	}
	for _, ref := range []struct{ name, sql string }{
		{pgpSym, "UPDATE " + table + " SET enc = pgp_sym_encrypt(body, $1)"},
		{encryptIV, "UPDATE " + table + " SET enc = encrypt_iv(convert_to(body, 'UTF8'), $1::bytea, $2::bytea, 'aes-cbc')"},
	} {
		r, err := e.reference(ctx, ref.name, ref.sql, passphrase, key, iv)
		if err != nil {
			out = append(out, lab.Unavailable("migrate", ref.name, lab.SourceReference, err))
			continue
		}
		out = append(out, r)
	}
	return out
}

func (e *env) reference(ctx context.Context, name, query string, args ...any) (lab.Result, error) {
	if err := e.load(ctx); err != nil {
		return lab.Result{}, err
	}
	for _, s := range []string{"CREATE EXTENSION IF NOT EXISTS pgcrypto", "ALTER TABLE " + table + " ADD COLUMN enc BYTEA"} {
		if _, err := e.db.ExecContext(ctx, s); err != nil {
			return lab.Result{}, err
		}
	}
	// Each statement gets the parameters it names.
	if name == pgpSym {
		args = args[:1]
	} else {
		args = args[1:]
	}
	start := time.Now()
	if _, err := e.db.ExecContext(ctx, query, args...); err != nil {
		return lab.Result{}, err
	}
	r := lab.Derived("migrate", name, map[string]any{"job": name}, "rows_per_second", "rows/s", elapsedRate(e.rows, time.Since(start)),
		"one UPDATE over the whole table into a BYTEA column: one long transaction, and the key travels in the SQL statement's parameters")
	r.Source = lab.SourceReference
	return r, nil
}

// appLatency runs an application loop (read and open a random row, or
// write a sealed value) alone and during an encrypt-existing job limited
// to rate rows/s, and compares the loop's p95 latency.
func (e *env) appLatency(ctx context.Context, rate float64) ([]lab.Result, error) {
	d := 10 * time.Second
	if e.rows <= QuickRows {
		d = 3 * time.Second
	}
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	app, err := e.column(field.AcceptPlaintext())
	if err != nil {
		return nil, err
	}
	mon := e.monitor(ctx)
	alone, err := e.appLoop(ctx, app, d, nil)
	aloneLoad := mon()
	if err != nil {
		return nil, err
	}
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	// The job runs as an operator would throttle it: one worker, small
	// batches (short row locks), limited to rate; the loop measures only
	// while it runs.
	jctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		(&reseal.Job{DB: e.db, Dialect: e.dialect, Column: app, Key: "id", FromPlaintext: true, BatchSize: 100, Rate: rate}).Run(jctx)
	}()
	mon = e.monitor(ctx)
	during, err := e.appLoop(ctx, app, d, finished)
	duringLoad := mon()
	cancel()
	<-finished
	if err != nil {
		return nil, err
	}
	p := map[string]any{"job_rate": rate}
	a := lab.FromSamples("migrate", appAlone, p, "latency", "ms", alone)
	b := lab.FromSamples("migrate", appDuring, p, "latency", "ms", during)
	ratio := b.P95 / a.P95
	out := []lab.Result{a, b, lab.Derived("migrate", appRatio, p, "p95_ratio", "x", ratio,
		"the application loop's p95 latency during a job limited to 25% of one worker's unthrottled rate, over its p95 alone")}
	for _, l := range []struct {
		name string
		s    saturation
	}{{appAlone, aloneLoad}, {appDuring, duringLoad}} {
		out = append(out,
			lab.Derived("migrate", l.name, p, "cpu_busy", "%", l.s.cpu*100, "share of all cores busy (this process and the database)"),
			lab.Derived("migrate", l.name, p, "lock_waits", "%", l.s.lock*100, "share of sampled database sessions waiting on a lock"),
			lab.Derived("migrate", l.name, p, "io_waits", "%", l.s.io*100, "share of sampled database sessions waiting on I/O or the WAL"))
	}
	out = append(out, lab.Derived("migrate", appBottleneck, p, "p95_ratio", "x", ratio, bottleneck(ratio, aloneLoad, duringLoad)))
	return out, nil
}

// appBottleneck is the case naming what limits the application during a
// throttled job.
const appBottleneck = "app-loop/saturated-resource"

// saturation is what a phase of the application loop ran against: the
// share of all cores busy, and the shares of sampled database sessions
// waiting on locks and on I/O (WAL writes and flushes included).
type saturation struct{ cpu, lock, io float64 }

// monitor samples the machine and the database's sessions every 50 ms
// until the returned function is called, which returns the averages.
func (e *env) monitor(ctx context.Context) func() saturation {
	cpu0 := lab.ReadLoad()
	stop := make(chan struct{})
	done := make(chan saturation)
	go func() {
		var sessions, lock, io int
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				s := saturation{cpu: lab.ReadLoad().BusySince(cpu0)}
				if sessions > 0 {
					s.lock, s.io = float64(lock)/float64(sessions), float64(io)/float64(sessions)
				}
				done <- s
				return
			case <-t.C:
			}
			if e.dialect != field.Postgres {
				continue
			}
			rows, err := e.db.QueryContext(ctx, `SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, '') FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var typ, ev string
				if rows.Scan(&typ, &ev) != nil {
					continue
				}
				sessions++
				switch {
				case typ == "Lock":
					lock++
				case typ == "IO" || strings.HasPrefix(ev, "WAL"):
					io++
				}
			}
			rows.Close()
		}
	}()
	return func() saturation { close(stop); return <-done }
}

// bottleneck names the resource that limits the application during the
// job: the one whose use the job raised, CPU first (on a small machine the
// job's sealing, the database's work on its batches and the application
// share the cores).
func bottleneck(ratio float64, alone, during saturation) string {
	what := fmt.Sprintf("CPU busy %.0f%% alone, %.0f%% during the job; database sessions waiting on locks %.0f%% / %.0f%%, on I/O and WAL flushes %.0f%% / %.0f%%",
		alone.cpu*100, during.cpu*100, alone.lock*100, during.lock*100, alone.io*100, during.io*100)
	switch {
	case ratio <= 1.2:
		return "within the 1.2x target (" + what + ")"
	case during.cpu >= 0.85 || (during.cpu >= 0.7 && during.cpu-alone.cpu >= 0.15):
		return "CPU: the job's sealing and the database's work on its batches take the cores the application was using (" + what + ")"
	case during.lock >= 0.1 && during.lock-alone.lock >= 0.05:
		return "row locks (" + what + ")"
	case during.io-alone.io >= 0.1:
		return "I/O and WAL flushes (" + what + ")"
	}
	return "no resource saturated: scheduling delay behind the job's batches (" + what + ")"
}

// appLoop reads or writes random rows for d, or until stop yields, and
// returns each operation's latency in ms.
func (e *env) appLoop(ctx context.Context, col *field.Column, d time.Duration, stop <-chan struct{}) ([]float64, error) {
	sel := e.dialect.Rebind("SELECT body FROM " + table + " WHERE id = ?")
	upd := e.dialect.Rebind("UPDATE " + table + " SET body = ? WHERE id = ?")
	var out []float64
	r := rand.New(rand.NewPCG(1, 2))
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case <-stop:
			return out, nil
		default:
		}
		id := int64(r.IntN(e.rows) + 1)
		start := time.Now()
		if r.IntN(2) == 0 {
			var ct field.Ciphertext
			if err := e.db.QueryRowContext(ctx, sel, id).Scan(&ct); err != nil && err != sql.ErrNoRows {
				return nil, err
			}
			if _, err := col.OpenString(field.RowInt(id), ct); err != nil {
				return nil, fmt.Errorf("reseal: the application read row %d: %w", id, err)
			}
		} else {
			ct, err := col.SealString(field.RowInt(id), message(int(id)))
			if err != nil {
				return nil, err
			}
			if _, err := e.db.ExecContext(ctx, upd, ct, id); err != nil {
				return nil, err
			}
		}
		out = append(out, lab.Milliseconds(time.Since(start)))
	}
	return out, nil
}
