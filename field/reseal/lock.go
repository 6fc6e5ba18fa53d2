package reseal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
)

// LockTable is the table in which a running job holds its column (and
// shard), so that two jobs never work on the same rows at once.
const LockTable = "ward_job_lock"

// holderCol bounds a lock's holder as read back: ward writes host:pid.
var holderCol = sqltable.Bound{Col: "holder", Max: 512}

// lockLease is how long a lock lasts without renewal; a running job renews
// it after every batch. A job whose process died leaves a lock that
// another process on the same host takes over at once (the holder's pid is
// gone) and one on another host after the lease.
const lockLease = 30 * time.Second

// ErrJobRunning means another job holds the column (or this shard of it).
var ErrJobRunning = errors.New("reseal: another job is working on this column")

// jobLock is a held lock.
type jobLock struct {
	r            *Job
	name, holder string
}

// heldHere names the locks a job of this process holds now. A lock row
// naming this process that no job here holds was left by a job of this
// process that ended without releasing it (its database went away: a
// Galera node or a primary lost mid-job): a new job here takes it over at
// once instead of waiting out the lease.
var heldHere sync.Map

// lockName names what a job holds: the column, and its shard.
func (r *Job) lockName() string {
	n := r.Column.Table() + "." + r.Column.Name()
	if r.Shards > 1 {
		n += fmt.Sprintf("#%d/%d", r.Shard, r.Shards)
	}
	if r.Subject != "" {
		n += "@" + r.Subject
	}
	return n
}

// holderName is this process: host and pid.
func holderName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// lock takes the job's lock, or reports who holds it.
func (r *Job) lock(ctx context.Context) (*jobLock, error) {
	if err := sqltable.Create(ctx, r.DB, LockTable, `CREATE TABLE IF NOT EXISTS `+LockTable+` (name `+
		sqltable.KeyText(r.Dialect.String(), 1024)+` PRIMARY KEY, holder `+sqltable.LongText(r.Dialect.String())+` NOT NULL, expires BIGINT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("reseal: lock table: %w", err)
	}
	l := &jobLock{r: r, name: r.lockName(), holder: holderName()}
	for range 2 {
		took, err := l.take(ctx)
		if err != nil {
			return nil, err
		}
		if took {
			heldHere.Store(l.name, true)
			return l, nil
		}
		// The holder is read within a bound (a database writer can store
		// anything there) and quoted in the error.
		var holder string
		var expires int64
		var tooLong bool
		if err := r.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s, expires, %s FROM %s WHERE name = %s`, holderCol.Value(), sqltable.TooLong(holderCol), LockTable, r.Dialect.Placeholder(1)),
			l.name).Scan(&holder, &expires, &tooLong); errors.Is(err, sql.ErrNoRows) {
			continue // released in between
		} else if err != nil {
			return nil, fmt.Errorf("reseal: reading the job lock: %w", err)
		}
		if tooLong {
			return nil, fmt.Errorf("%w: %s is held by a holder named in more than %d bytes (not ward's) until %s", ErrJobRunning, l.name, holderCol.Max, time.UnixMilli(expires).Format(time.RFC3339))
		}
		if holder == l.holder {
			if _, running := heldHere.Load(l.name); !running {
				r.DB.ExecContext(ctx, r.Dialect.Rebind(fmt.Sprintf(`DELETE FROM %s WHERE name = ? AND holder = ?`, LockTable)), l.name, holder)
				continue // left by an ended job of this process
			}
		}
		if !deadOnThisHost(holder) {
			return nil, fmt.Errorf("%w: %s is held by %q until %s", ErrJobRunning, l.name, holder, time.UnixMilli(expires).Format(time.RFC3339))
		}
		// The holder died on this host: its lock is free now.
		r.DB.ExecContext(ctx, r.Dialect.Rebind(fmt.Sprintf(`DELETE FROM %s WHERE name = ? AND holder = ?`, LockTable)), l.name, holder)
	}
	return nil, fmt.Errorf("%w: %s", ErrJobRunning, l.name)
}

// take inserts the lock, or takes over one whose lease ended, in one
// statement (ON CONFLICT … DO UPDATE … WHERE); MySQL, which has no such
// conditional upsert, inserts and on a duplicate updates where the lease
// ended. A lost race, or on Galera a lost certification, is no lock.
func (l *jobLock) take(ctx context.Context) (bool, error) {
	r := l.r
	now := time.Now()
	until := now.Add(lockLease).UnixMilli()
	var res sql.Result
	var err error
	if r.Dialect == field.MySQL {
		res, err = r.DB.ExecContext(ctx, `INSERT INTO `+LockTable+` (name, holder, expires) VALUES (?, ?, ?)`, l.name, l.holder, until)
		if sqltable.Duplicate(err) {
			res, err = r.DB.ExecContext(ctx, `UPDATE `+LockTable+` SET holder = ?, expires = ? WHERE name = ? AND expires < ?`, l.holder, until, l.name, now.UnixMilli())
		}
	} else {
		p := r.Dialect.Placeholder
		res, err = r.DB.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (name, holder, expires) VALUES (%s, %s, %s)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires WHERE %s.expires < %s`,
			LockTable, p(1), p(2), p(3), LockTable, p(4)), l.name, l.holder, until, now.UnixMilli())
	}
	if sqltable.Conflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reseal: taking the job lock: %w", err)
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, nil
}

// deadOnThisHost reports whether holder names a process of this host that
// no longer exists.
func deadOnThisHost(holder string) bool {
	host, pid, ok := strings.Cut(holder, ":")
	if me, _ := os.Hostname(); !ok || host != me {
		return false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	return syscall.Kill(n, 0) == syscall.ESRCH || zombie(n)
}

// zombie reports whether process pid has exited but was not yet reaped by
// its parent (state Z or X in /proc/PID/stat, Linux): a job killed by a
// harness that has not waited for it yet is gone, though signal 0 still
// reaches it. False where /proc cannot tell.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')') // the command name may hold anything but ends there
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// renew extends the lease; a lock lost to another holder is an error.
func (l *jobLock) renew(ctx context.Context) error {
	p := l.r.Dialect.Placeholder
	res, err := l.r.DB.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET expires = %s WHERE name = %s AND holder = %s`, LockTable, p(1), p(2), p(3)),
		time.Now().Add(lockLease).UnixMilli(), l.name, l.holder)
	if err != nil {
		return fmt.Errorf("reseal: renewing the job lock: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 && !l.holds(ctx) {
		return fmt.Errorf("%w: the lock on %s was taken over", ErrJobRunning, l.name)
	}
	return nil
}

// holds reports whether the lock is still this job's: MySQL counts the
// rows an UPDATE changed, not those it matched, so a renewal within the
// same millisecond reports none.
func (l *jobLock) holds(ctx context.Context) bool {
	if l.r.Dialect != field.MySQL {
		return false
	}
	var n int
	err := l.r.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+LockTable+` WHERE name = ? AND holder = ?`, l.name, l.holder).Scan(&n)
	return err == nil && n == 1
}

// release gives the lock back.
func (l *jobLock) release() {
	defer heldHere.Delete(l.name)
	p := l.r.Dialect.Placeholder
	l.r.DB.ExecContext(context.Background(), fmt.Sprintf(`DELETE FROM %s WHERE name = %s AND holder = %s`, LockTable, p(1), p(2)), l.name, l.holder)
}

// HeldLocks counts the job locks in db whose lease has not ended, read
// without creating the table (none when it is missing).
func HeldLocks(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE expires >= %d`, LockTable, time.Now().UnixMilli())).Scan(&n)
	if sqltable.Missing(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reseal: reading the job locks: %w", err)
	}
	return n, nil
}

// ReleaseLocks deletes every job lock in db: for a recovery after the
// database went back in time, when the locks it holds are those of jobs
// that ran against the lost copy (ward's jobs — the CLI's, package
// lifecycle's — check the ledger before they take a lock, and the ledger
// refuses the database until the recovery ends).
func ReleaseLocks(ctx context.Context, db *sql.DB) (int64, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM `+LockTable)
	if sqltable.Missing(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reseal: releasing the job locks: %w", err)
	}
	return res.RowsAffected()
}
