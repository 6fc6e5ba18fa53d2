package subject

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// ResealOptions tune [Store.Reseal].
type ResealOptions struct {
	// Workers unwrap and re-wrap in parallel (default 1). Each writes its
	// own batches in its own transaction.
	Workers int
	// Batch is the number of key rows per transaction (default 500).
	Batch int
	// Progress, if set, is called after each batch with the totals so far.
	Progress func(ResealStats)
	// Shard and Shards give this run's share of the subjects: shard i of n
	// (0 <= i < n) takes the subjects whose FNV-1a hash is i modulo n, so
	// that n processes re-wrap a namespace together (n 0 or 1: all).
	Shard, Shards int
}

// ResealStats counts a reseal's work.
type ResealStats struct {
	Scanned   int64 // key rows read
	Resealed  int64 // key rows now wrapped under the primary
	Current   int64 // already under the primary: left alone
	Conflicts int64 // changed by another writer between read and write: left to the next run
	UserHeld  int64 // user-held keys: skipped (only their user can re-wrap them, at log-in)
	Elapsed   time.Duration
	// Tombstones is what moving the tombstones to the current integrity
	// epoch did (RemacTombstones; shard 0 of a sharded run, and only with
	// a ledger).
	Tombstones RemacStats
}

// Reseal re-wraps every key of the namespace that is not wrapped under
// the keyring's primary key (a subject key row is a value the keyring
// seals, so this is the reseal of the subject keys), so that an older keyring key can be retired
// (ward keyring retire). It is resumable: a row already under the primary
// is skipped without unwrapping, and each row is written by
// compare-and-swap on its old wrapped value, so a row changed meanwhile
// (forgotten, rotated) is never overwritten. A row that does not unwrap
// stops the job with its error: nothing is lost, and nothing is guessed.
func (s *Store) Reseal(ctx context.Context, opts ResealOptions) (ResealStats, error) {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.Shards > 1 && (opts.Shard < 0 || opts.Shard >= opts.Shards) {
		return ResealStats{}, fmt.Errorf("subject: shard %d of %d", opts.Shard, opts.Shards)
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	opts.Batch = min(opts.Batch, 10_000) // PostgreSQL's 65,535 parameters, 4 per row

	primary := s.cfg.Keyring.Primary().ID
	c := &resealCounts{start: time.Now()}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []keyRow, opts.Workers)
	var progressMu sync.Mutex
	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Go(func() {
			for b := range batches {
				n, conflicts, err := s.rewrapBatch(ctx, b)
				if err != nil {
					cancel(err)
					return
				}
				c.rewrapped.Add(n)
				c.conflicts.Add(conflicts)
				if opts.Progress != nil {
					progressMu.Lock()
					opts.Progress(c.snapshot())
					progressMu.Unlock()
				}
			}
		})
	}
	err := s.scan(ctx, opts.Batch, func(rows []keyRow) error {
		todo := c.todo(rows, opts, primary)
		if len(todo) == 0 {
			return nil
		}
		select {
		case batches <- todo:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(batches)
	wg.Wait()
	st := c.snapshot()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return st, cause
	}
	if err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	// The tombstones move with the keys: the older key's epoch, which
	// they may name, ends when it is retired.
	if s.cfg.Ledger != nil && opts.Shard == 0 {
		st.Tombstones, err = s.RemacTombstones(ctx)
	}
	return st, err
}

// resealCounts count a re-wrap's work across its workers.
type resealCounts struct {
	start                                            time.Time
	scanned, rewrapped, current, conflicts, userHeld atomic.Int64
}

func (c *resealCounts) snapshot() ResealStats {
	return ResealStats{Scanned: c.scanned.Load(), Resealed: c.rewrapped.Load(), Current: c.current.Load(), Conflicts: c.conflicts.Load(),
		UserHeld: c.userHeld.Load(), Elapsed: time.Since(c.start)}
}

// todo returns the rows of one scanned page that this run re-wraps: this
// shard's keyring-wrapped keys not under primary. It counts the rest.
func (c *resealCounts) todo(rows []keyRow, opts ResealOptions, primary keyring.KeyID) []keyRow {
	var todo []keyRow
	for _, r := range rows {
		if opts.Shards > 1 && shardOf(r.subject, opts.Shards) != opts.Shard {
			continue
		}
		if r.held != heldByKeyring {
			c.userHeld.Add(1)
			continue
		}
		id, err := keycore.KeyIDOf(r.wrapped)
		if err == nil && id == primary {
			c.current.Add(1)
			continue
		}
		todo = append(todo, r)
	}
	c.scanned.Add(int64(len(rows))) // read, this shard's or not
	return todo
}

// shardOf is the shard of a subject among n: its FNV-1a hash modulo n.
func shardOf(subject string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

type keyRow struct {
	subject string
	version int64
	wrapped []byte
	held    held
}

// scan reads the namespace's key rows in (subject, version) order, a page
// at a time, so that memory stays bounded whatever the table's size.
func (s *Store) scan(ctx context.Context, page int, fn func([]keyRow) error) error {
	p := s.cfg.Dialect.Placeholder
	var afterSubject string
	var afterVersion int64 = -1
	for {
		// A row-value comparison, so that each page is a range scan of the
		// primary key (namespace, subject, version), not a sort of the rest.
		// Each row within bounds; a subject ID past its bound stops the
		// walk (read as empty, it would restart the pages).
		rows, err := s.cfg.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s, version, %s, held, %s FROM %s
			WHERE namespace = %s AND (subject, version) > (%s, %s)
			ORDER BY subject, version LIMIT %d`, subjectCol.Value(), wrappedCol.Value(), sqltable.TooLong(subjectCol), s.keys, p(1), p(2), p(3), page),
			s.cfg.Namespace, afterSubject, afterVersion)
		if err != nil {
			return fmt.Errorf("subject: reading keys: %w", err)
		}
		var batch []keyRow
		for rows.Next() {
			var r keyRow
			var tooLong bool
			if err := rows.Scan(&r.subject, &r.version, &r.wrapped, &r.held, &tooLong); err != nil {
				rows.Close()
				return fmt.Errorf("subject: reading keys: %w", err)
			}
			if tooLong {
				rows.Close()
				return fmt.Errorf("subject: reading keys: a subject ID in %s of more than %d bytes (a database writer's)", s.cfg.Namespace, MaxSubjectLen)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("subject: reading keys: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		last := batch[len(batch)-1]
		afterSubject, afterVersion = last.subject, last.version
		if err := fn(batch); err != nil {
			return err
		}
		if len(batch) < page {
			return nil
		}
	}
}

// rewrapBatch re-wraps rows under the primary in one transaction.
func (s *Store) rewrapBatch(ctx context.Context, rows []keyRow) (done, conflicts int64, err error) {
	type update struct {
		row     keyRow
		wrapped []byte
	}
	ups := make([]update, 0, len(rows))
	for _, r := range rows {
		if r.version <= 0 || r.version > 1<<32-1 {
			return 0, 0, fmt.Errorf("subject: %s/%s: key version %d out of range", s.cfg.Namespace, r.subject, r.version)
		}
		wc := s.wrapContext(r.subject, uint32(r.version))
		sk, err := s.cfg.Keyring.UnwrapSubjectKey(r.wrapped, wc)
		if err != nil {
			return 0, 0, fmt.Errorf("subject: unwrapping the key of %s/%s version %d: %w", s.cfg.Namespace, r.subject, r.version, err)
		}
		w, err := s.cfg.Keyring.WrapSubjectKey(sk, wc)
		sk.Destroy()
		if err != nil {
			return 0, 0, err
		}
		ups = append(ups, update{r, w})
	}
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("subject: re-wrapping: %w", err)
	}
	defer tx.Rollback()
	p := s.cfg.Dialect.Placeholder
	if s.cfg.Dialect == field.Postgres {
		// One statement per batch: each row still only if it holds what
		// was read (compare-and-swap on the old wrapped key).
		var b strings.Builder
		args := []any{s.cfg.Namespace}
		fmt.Fprintf(&b, `UPDATE %s AS k SET wrapped = v.new FROM (VALUES `, s.keys)
		for i, u := range ups {
			if i > 0 {
				b.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&b, "(%s::text, %s::bigint, %s::bytea, %s::bytea)", p(n+1), p(n+2), p(n+3), p(n+4))
			args = append(args, u.row.subject, u.row.version, u.row.wrapped, u.wrapped)
		}
		fmt.Fprintf(&b, `) AS v(subject, version, old, new) WHERE k.namespace = %s AND k.subject = v.subject AND k.version = v.version AND k.wrapped = v.old AND k.held = 0`, p(1))
		res, err := tx.ExecContext(ctx, b.String(), args...)
		if err != nil {
			return 0, 0, fmt.Errorf("subject: re-wrapping: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, 0, err
		}
		done, conflicts = n, int64(len(ups))-n
	} else {
		stmt, err := tx.PrepareContext(ctx, fmt.Sprintf(`UPDATE %s SET wrapped = %s WHERE namespace = %s AND subject = %s AND version = %s AND wrapped = %s AND held = 0`,
			s.keys, p(1), p(2), p(3), p(4), p(5)))
		if err != nil {
			return 0, 0, fmt.Errorf("subject: re-wrapping: %w", err)
		}
		defer stmt.Close()
		for _, u := range ups {
			res, err := stmt.ExecContext(ctx, u.wrapped, s.cfg.Namespace, u.row.subject, u.row.version, u.row.wrapped)
			if err != nil {
				return 0, 0, fmt.Errorf("subject: re-wrapping %s/%s: %w", s.cfg.Namespace, u.row.subject, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return 0, 0, err
			} else if n == 1 {
				done++
			} else {
				conflicts++
			}
		}
	}
	if err := sqltable.Commit(ctx, tx); err != nil {
		return 0, 0, fmt.Errorf("subject: re-wrapping: %w", err)
	}
	return done, conflicts, nil
}

// Census is what a namespace's keys are wrapped under.
type Census struct {
	// ByKey counts keyring-wrapped keys by the keyring key that wraps them.
	ByKey map[keyring.KeyID]int64
	// UserHeld counts keys only their users can unwrap; Lost, keys lost in
	// a password reset. Neither references a keyring key.
	UserHeld, Lost int64
}

// Census counts the namespace's key rows by what wraps them: what ward
// keyring retire checks before removing a key.
func (s *Store) Census(ctx context.Context) (Census, error) {
	out := Census{ByKey: map[keyring.KeyID]int64{}}
	err := s.scan(ctx, 1000, func(rows []keyRow) error {
		for _, r := range rows {
			switch r.held {
			case heldByUser:
				out.UserHeld++
				continue
			case heldLost:
				out.Lost++
				continue
			}
			id, err := keycore.KeyIDOf(r.wrapped)
			if err != nil {
				return fmt.Errorf("subject: %s/%s version %d: %w", s.cfg.Namespace, r.subject, r.version, err)
			}
			out.ByKey[id]++
		}
		return nil
	})
	return out, err
}

// Namespaces lists the namespaces that hold subject keys or tombstones in
// a database, sorted: with table "", those of the default keys and
// tombstones tables (a namespace whose every subject was forgotten still
// has its tombstones to audit); otherwise those of the keys table named.
// A missing table lists nothing. d is the database's dialect.
func Namespaces(ctx context.Context, db *sql.DB, d field.Dialect, table string) ([]string, error) {
	tables := []string{table}
	if table == "" {
		tables = []string{DefaultKeysTable, DefaultTombstonesTable}
	}
	seen := map[string]bool{}
	for _, name := range tables {
		t, err := d.Quote(name)
		if err != nil {
			return nil, err
		}
		rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT namespace FROM %s`, t))
		if sqltable.Missing(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("subject: listing namespaces: %w", err)
		}
		for rows.Next() {
			var ns string
			if err := rows.Scan(&ns); err != nil {
				rows.Close()
				return nil, err
			}
			seen[ns] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// CountedNamespaces lists the namespaces whose forgets a ledger state
// counts: an audit must look at them even if a database writer deleted
// every key and tombstone of one.
func CountedNamespaces(st *ledger.State) []string {
	var out []string
	if st == nil {
		return nil
	}
	for name := range st.Counters {
		if ns, ok := strings.CutPrefix(name, forgetCounterPrefix); ok {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// Provision gives each subject without a key its first key, a batch per
// statement, insert-if-absent as a first seal does (a subject that has a
// key, or gets one meanwhile, keeps it; a forgotten subject is skipped).
// It is for adopting keys per user over existing subjects, so that a
// migration job does not create them one query at a time. It returns how
// many keys it created.
func (s *Store) Provision(ctx context.Context, subjects []string) (int64, error) {
	const batch = 1000
	var created int64
	now := time.Now().Unix()
	for from := 0; from < len(subjects); from += batch {
		chunk := subjects[from:min(from+batch, len(subjects))]
		args := make([]any, 0, 5*len(chunk))
		for _, subj := range chunk {
			if err := checkSubject(subj); err != nil {
				return created, err
			}
			version := s.firstVersion()
			sk, err := keyring.NewSubjectKey(s.cfg.Algorithm, version)
			if err != nil {
				return created, err
			}
			w, err := s.cfg.Keyring.WrapSubjectKey(sk, s.wrapContext(subj, version))
			sk.Destroy()
			if err != nil {
				return created, err
			}
			args = append(args, s.cfg.Namespace, subj, int64(version), w, now)
		}
		res, err := s.cfg.DB.ExecContext(ctx, s.provisionSQL(len(chunk)), args...)
		if err != nil {
			return created, fmt.Errorf("subject: provisioning keys: %w", err)
		}
		n, _ := res.RowsAffected()
		created += n
	}
	return created, nil
}

// provisionSQL is Provision's insert of n subjects' first keys from a
// list of (namespace, subject, version, wrapped, created_at): a VALUES
// list on PostgreSQL (typed) and SQLite (whose VALUES columns are named
// column1…), rows of SELECT … UNION ALL on MySQL (binary values cast to
// bytes). Each row is skipped if the subject has a tombstone or a key.
func (s *Store) provisionSQL(n int) string {
	var b strings.Builder
	ins, skip := sqltable.IfAbsent(s.cfg.Dialect.String())
	fmt.Fprintf(&b, `%s %s (namespace, subject, version, first, wrapped, created_at) SELECT v.namespace, v.subject, v.version, 1, v.wrapped, v.created_at FROM (`, ins, s.keys)
	for i := range n {
		m := 5 * i
		switch {
		case s.cfg.Dialect == field.Postgres:
			b.WriteString(map[bool]string{true: "VALUES ", false: ", "}[i == 0])
			fmt.Fprintf(&b, "($%d::text, $%d::text, $%d::bigint, $%d::bytea, $%d::bigint)", m+1, m+2, m+3, m+4, m+5)
		case s.cfg.Dialect == field.MySQL && i == 0:
			b.WriteString("SELECT ? AS namespace, ? AS subject, ? AS version, CAST(? AS BINARY) AS wrapped, ? AS created_at")
		case s.cfg.Dialect == field.MySQL:
			b.WriteString(" UNION ALL SELECT ?, ?, ?, CAST(? AS BINARY), ?")
		case i == 0:
			b.WriteString("SELECT column1 AS namespace, column2 AS subject, column3 AS version, column4 AS wrapped, column5 AS created_at FROM (VALUES (?, ?, ?, ?, ?)")
		default:
			b.WriteString(", (?, ?, ?, ?, ?)")
		}
	}
	switch s.cfg.Dialect {
	case field.Postgres:
		b.WriteString(`) AS v(namespace, subject, version, wrapped, created_at)`)
	case field.MySQL:
		b.WriteString(`) AS v`)
	default:
		b.WriteString(`)) AS v`)
	}
	fmt.Fprintf(&b, ` WHERE NOT EXISTS (SELECT 1 FROM %s t WHERE t.namespace = v.namespace AND t.subject = v.subject)%s`, s.tombstones, skip)
	return b.String()
}
