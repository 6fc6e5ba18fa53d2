package chat

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// migrations run in order on start (migrate); the applied count is kept
// in schema_version. Each runs once: append new ones, never edit one. Migrations 6 to 11 bind values to their owners: a
// message's owner is denormalised into messages.user_id, so that its
// binding is row-local, and sessions and password hashes get row MACs
// (old sessions are dropped: their users log in again).
var migrations = []string{
	`CREATE TABLE users (id BIGINT PRIMARY KEY, email BLOB NOT NULL, email_idx BLOB NOT NULL UNIQUE, password TEXT NOT NULL, created BIGINT NOT NULL)`,
	`CREATE TABLE sessions (token_hash BLOB PRIMARY KEY, user_id BIGINT NOT NULL, expires BIGINT NOT NULL)`,
	`CREATE TABLE conversations (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, title BLOB, created BIGINT NOT NULL)`,
	`CREATE TABLE messages (id BIGINT PRIMARY KEY, conversation_id BIGINT NOT NULL, role TEXT NOT NULL, body BLOB, created BIGINT NOT NULL)`,
	`CREATE INDEX messages_conversation ON messages (conversation_id, id)`,
	`ALTER TABLE messages ADD COLUMN user_id BIGINT`,
	`UPDATE messages SET user_id = (SELECT c.user_id FROM conversations c WHERE c.id = messages.conversation_id)`,
	`ALTER TABLE users ADD COLUMN password_mac BLOB`,
	`ALTER TABLE sessions ADD COLUMN mac BLOB`,
	`DELETE FROM sessions`,
	`CREATE INDEX sessions_expires ON sessions (expires)`,
	`CREATE TABLE chat_state (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	`CREATE TABLE signups (token_hash BLOB PRIMARY KEY, email BLOB NOT NULL, email_idx BLOB NOT NULL, password TEXT NOT NULL, mac BLOB NOT NULL, expires BIGINT NOT NULL)`,
	`CREATE TABLE outbox (id BIGINT PRIMARY KEY, recipient BLOB NOT NULL, body BLOB NOT NULL, created BIGINT NOT NULL)`, // created: Unix nanoseconds
	`CREATE TABLE resets (token_hash BLOB PRIMARY KEY, user_id BIGINT NOT NULL, expires BIGINT NOT NULL, mac BLOB NOT NULL)`,
	`CREATE INDEX messages_user ON messages (user_id)`,
	`CREATE INDEX conversations_user ON conversations (user_id)`,
	emailIdxNullable,
	`ALTER TABLE users ADD COLUMN email_idx2 BLOB`,
	`CREATE UNIQUE INDEX users_email_idx2 ON users (email_idx2)`,
	`CREATE TABLE access_log (seq BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, at BIGINT NOT NULL, reader VARCHAR(64) NOT NULL, conversation_id BIGINT NOT NULL, messages BIGINT NOT NULL, head BLOB NOT NULL, mac BLOB NOT NULL)`,
	`CREATE INDEX access_log_user ON access_log (user_id, seq)`,
}

// emailIdxNullable (migration 19) lets users.email_idx hold NULL, and the
// two migrations after it add users.email_idx2 with its own unique index:
// the blind index of the addresses is re-keyed into whichever of the two
// columns is free, and the other is cleared (emailIndex). Its statements
// differ by database (dialectSteps).
const emailIdxNullable = `ALTER TABLE users ALTER COLUMN email_idx DROP NOT NULL`

// dialectSteps are the statements of a migration on a database where its
// text does not work: MySQL restates the column, SQLite (whose ALTER
// TABLE cannot drop a constraint) rebuilds the table within the
// migration's transaction.
var dialectSteps = map[string]map[field.Dialect][]string{
	emailIdxNullable: {
		field.MySQL: {`ALTER TABLE users MODIFY email_idx VARBINARY(64) NULL`},
		field.SQLite: {
			`CREATE TABLE users_rebuilt (id BIGINT PRIMARY KEY, email BLOB NOT NULL, email_idx BLOB UNIQUE, password TEXT NOT NULL, created BIGINT NOT NULL, password_mac BLOB)`,
			`INSERT INTO users_rebuilt (id, email, email_idx, password, created, password_mac) SELECT id, email, email_idx, password, created, password_mac FROM users`,
			`DROP TABLE users`,
			`ALTER TABLE users_rebuilt RENAME TO users`,
		},
	},
}

// migrationLock is the PostgreSQL advisory lock key under which migrate
// runs ("ward" "chat" as bytes).
const migrationLock = 0x77617264_63686174

// migrate applies the migrations the database lacks, all in one
// transaction that holds a lock from its first statement: processes
// starting at once (the first start of several replicas, or a fleet's
// restart onto a release with a new migration) apply each migration
// exactly once, and a failed one leaves the database as it was. The lock
// is a transaction-scoped advisory lock on PostgreSQL and the database's
// write lock on SQLite (BEGIN IMMEDIATE, waited for up to the busy
// timeout); both databases roll DDL back with the transaction.
func migrate(ctx context.Context, db *sql.DB, dialect field.Dialect) error {
	err := inMigrationLock(ctx, db, dialect, func(q querier) error {
		if _, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (n INTEGER NOT NULL)`); err != nil {
			return err
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := q.ExecContext(ctx, `INSERT INTO schema_version (n) VALUES (0)`); err != nil {
				return err
			}
		}
		if err := q.QueryRowContext(ctx, `SELECT n FROM schema_version`).Scan(&n); err != nil {
			return err
		}
		if dialect == field.MySQL {
			if err := preflight(ctx, q, n); err != nil {
				return err
			}
		}
		for i := n; i < len(migrations); i++ {
			if err := step(ctx, q, dialect, i, i == n); err != nil {
				return err
			}
		}
		if n < len(migrations) {
			if _, err := q.ExecContext(ctx, dialect.Rebind(`UPDATE schema_version SET n = ?`), len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chat: migrations: %w", err)
	}
	return nil
}

// step runs migration i. On MySQL, whose DDL commits at once, each step
// records itself as it ends, and the first step of a run (first), which a
// killed process may have run but not recorded, counts as done when the
// database says its table, column or index exists (1050, 1060, 1061).
func step(ctx context.Context, q querier, dialect field.Dialect, i int, first bool) error {
	stmts, ok := dialectSteps[migrations[i]][dialect]
	if !ok {
		stmts = migrations[i : i+1]
	}
	var err error
	for _, m := range stmts {
		switch dialect {
		case field.Postgres:
			m = strings.ReplaceAll(m, "BLOB", "BYTEA")
		case field.MySQL:
			m = mysqlTypes.Replace(m)
		}
		if _, err = q.ExecContext(ctx, m); err != nil {
			break
		}
	}
	if dialect != field.MySQL {
		if err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		return nil
	}
	if err != nil && !(first && alreadyApplied(err)) {
		return fmt.Errorf("migration %d: %w", i+1, err)
	}
	if _, err := q.ExecContext(ctx, `UPDATE schema_version SET n = ?`, i+1); err != nil {
		return fmt.Errorf("migration %d: %w", i+1, err)
	}
	return nil
}

// mysqlTypes maps the migrations' types to MySQL's: keys and indexed
// columns are VARBINARY (MySQL indexes no BLOB or TEXT without a prefix
// length), other values LONGBLOB.
var mysqlTypes = strings.NewReplacer(
	"token_hash BLOB PRIMARY KEY", "token_hash VARBINARY(64) PRIMARY KEY",
	"email_idx BLOB NOT NULL UNIQUE", "email_idx VARBINARY(64) NOT NULL UNIQUE",
	"email_idx BLOB NOT NULL", "email_idx VARBINARY(64) NOT NULL",
	"email_idx2 BLOB", "email_idx2 VARBINARY(64)",
	"k TEXT PRIMARY KEY", "k VARCHAR(191) PRIMARY KEY",
	"role TEXT", "role VARCHAR(32)",
	"BLOB", "LONGBLOB",
)

// alreadyApplied reports MySQL's "table exists" (1050), "duplicate
// column" (1060) and "duplicate key name" (1061).
func alreadyApplied(err error) bool {
	for _, n := range []string{"Error 1050 ", "Error 1060 ", "Error 1061 "} {
		if strings.Contains(err.Error(), n) {
			return true
		}
	}
	return false
}

// preflight refuses, before any step runs, a schema_version behind the
// schema (MySQL, where a failed step cannot roll the others back): if a
// table, column or index a step after the first to run creates exists,
// the count was lowered or deleted (a database writer, or a restore of the
// table alone), and running the steps between would repeat their data
// changes (migration 10 empties sessions).
func preflight(ctx context.Context, q querier, n int) error {
	for i := n + 1; i < len(migrations); i++ {
		var query string
		var args []any
		m := migrations[i]
		switch {
		case createTable.MatchString(m):
			query, args = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, []any{createTable.FindStringSubmatch(m)[1]}
		case createIndex.MatchString(m):
			g := createIndex.FindStringSubmatch(m)
			query, args = `SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, []any{g[2], g[1]}
		case addColumn.MatchString(m):
			g := addColumn.FindStringSubmatch(m)
			query, args = `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?`, []any{g[1], g[2]}
		default:
			continue // a data step leaves no object to find
		}
		var found int
		if err := q.QueryRowContext(ctx, query, args...).Scan(&found); err != nil {
			return err
		}
		if found > 0 {
			return fmt.Errorf("%w: schema_version says %d steps ran, but step %d's %v exists: nothing was run (put the count back)", ErrSchemaAhead, n, i+1, args)
		}
	}
	return nil
}

// ErrSchemaAhead means the schema holds what schema_version says is still
// to be created.
var ErrSchemaAhead = errors.New("chat: the schema is ahead of schema_version")

var (
	createTable = regexp.MustCompile(`^CREATE TABLE (\w+)`)
	createIndex = regexp.MustCompile(`^CREATE (?:UNIQUE )?INDEX (\w+) ON (\w+)`)
	addColumn   = regexp.MustCompile(`^ALTER TABLE (\w+) ADD COLUMN (\w+)`)
)

// querier is what a migration runs statements through: a *sql.Tx or the
// *sql.Conn of a SQLite transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inMigrationLock runs fn in a transaction that holds the migration lock
// from its start, and commits if fn succeeds.
func inMigrationLock(ctx context.Context, db *sql.DB, dialect field.Dialect, fn func(querier) error) error {
	if dialect == field.MySQL {
		return inLockRow(ctx, db, fn)
	}
	if dialect == field.Postgres {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	// database/sql's BeginTx starts a deferred SQLite transaction, which
	// takes the write lock only at its first write; one that read first
	// then gets SQLITE_BUSY at once if another process wrote meanwhile.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	err = fn(conn)
	if err == nil {
		_, err = conn.ExecContext(ctx, `COMMIT`)
	}
	if err != nil {
		if _, rerr := conn.ExecContext(context.Background(), `ROLLBACK`); rerr != nil {
			// Never hand a connection inside a transaction back to the pool.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}
	return nil
}

// markBound is the ledger mark recording that every value is bound to its
// owner and every password hash has its row MAC: set by Init on a new
// database and by Migrate, once. It lives in the database's authenticated
// ledger and in the keyring file's anchor, so a database writer can
// neither delete it (to make the service vouch for planted rows) nor plant
// it.
const markBound = "chat.bound-v2"

// ErrNeedsMigration means the database holds rows from before values
// were bound to their owners: the service does not start on it until an
// operator runs Migrate (ward-chat migrate).
var ErrNeedsMigration = errors.New("chat: the database holds rows written before values were bound to their owners")

// checkMigrated refuses a database whose binding migration has not run:
// the service never re-binds rows or computes MACs for rows it did not
// write itself, whatever the database says. The mark that says so is
// anchored outside the database (see markBound).
func checkMigrated(ctx context.Context, db *sql.DB, dialect field.Dialect, ledger *ledger.Ledger, kr *keyring.Keyring) error {
	ok, err := ledger.Marked(ctx, kr, markBound)
	if err != nil {
		return fmt.Errorf("chat: reading the ledger: %w", err)
	}
	if ok {
		var unmaced int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE password_mac IS NULL`).Scan(&unmaced); err != nil {
			return fmt.Errorf("chat: reading state: %w", err)
		}
		if unmaced == 0 {
			return nil
		}
		return fmt.Errorf("%w: %d password hashes have no row MAC although the database is marked migrated: a database writer may have planted them; restore the users table from a backup", ErrNeedsMigration, unmaced)
	}
	// A database that already served ward (its ledger, other tables'
	// columns) but holds no chat row yet has nothing written before values
	// were bound: it is as new for the chat as one ward-chat init made.
	var rows int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM conversations) + (SELECT COUNT(*) FROM messages)`).Scan(&rows); err != nil {
		return fmt.Errorf("chat: reading state: %w", err)
	}
	if rows == 0 {
		return ledger.Mark(ctx, kr, markBound)
	}
	return ErrNeedsMigration
}

// Migrate brings a database written before values were bound to their
// owners up to date, once, when an operator asks (ward-chat migrate): it
// re-encrypts message bodies and titles under their bound columns
// (accepting the old row-only binding while it runs) and gives every
// password hash its row MAC. It trusts the rows as they are at that
// moment: run it on a database you restored or upgraded, while nobody
// else writes to it — never on one a writer may have altered. It prints a
// count per table, and refuses a database already migrated.
func Migrate(ctx context.Context, cfg Config, out io.Writer) error {
	kr, err := keyring.Load(ctx, cfg.KeyringPath, cfg.KeyService)
	if err != nil {
		return err
	}
	db, dialect, err := openDB(cfg.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrate(ctx, db, dialect); err != nil {
		return err
	}
	ledger := &ledger.Ledger{DB: db, Dialect: dialect}
	if err := ledger.Check(ctx, kr); err != nil {
		return fmt.Errorf("chat: refusing keyring %s: %w", cfg.KeyringPath, err)
	}
	if err := checkMigrated(ctx, db, dialect, ledger, kr); err == nil {
		return errors.New("chat: the database is already migrated: Migrate runs once")
	} else if !errors.Is(err, ErrNeedsMigration) {
		return err
	}
	if err := ledger.Record(ctx, kr); err != nil {
		return err
	}
	subjects, err := openSubjects(ctx, db, dialect, kr, ledger, nil)
	if err != nil {
		return err
	}
	cols, err := newColumns(kr, true, subjects, nil)
	if err != nil {
		return err
	}
	if err := cols.rowMACs(ctx, ledger, kr, nil); err != nil {
		return err
	}
	for _, col := range []*field.Column{cols.email, cols.body, cols.title} {
		job := &reseal.Job{DB: db, Dialect: dialect, Column: col, Key: "id"}
		st, err := job.Run(ctx)
		if err != nil {
			return fmt.Errorf("chat: re-binding %s.%s: %w", col.Table(), col.Name(), err)
		}
		verb := "re-bound to their owners"
		if col.Bound() == nil {
			verb = "re-sealed in the current format"
		}
		fmt.Fprintf(out, "%s.%s: %d values %s, %d already current\n", col.Table(), col.Name(), st.Resealed, verb, st.Current)
	}
	n, err := macPasswords(ctx, db, dialect, cols.passwordMAC)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "users.password: %d hashes given their row MAC (trusted as they were)\n", n)
	if err := ledger.Mark(ctx, kr, markBound); err != nil {
		return fmt.Errorf("chat: recording the migration: %w", err)
	}
	fmt.Fprintf(out, "recorded in the ledger and the keyring file: Migrate will not run again, and row-only (v1) values are refused from now on\n")
	return nil
}

// macPasswords adds the row MAC of every password hash that has none.
func macPasswords(ctx context.Context, db *sql.DB, dialect field.Dialect, mac *field.RowMAC) (int, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, password FROM users WHERE password_mac IS NULL`)
	if err != nil {
		return 0, fmt.Errorf("chat: reading password hashes: %w", err)
	}
	type row struct {
		id   int64
		hash string
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.hash); err != nil {
			rows.Close()
			return 0, err
		}
		todo = append(todo, r)
	}
	rows.Close()
	for _, r := range todo {
		tag, err := mac.Sum(r.id, r.hash)
		if err != nil {
			return 0, err
		}
		if _, err := db.ExecContext(ctx, dialect.Rebind(`UPDATE users SET password_mac = ? WHERE id = ? AND password = ? AND password_mac IS NULL`), tag, r.id, r.hash); err != nil {
			return 0, fmt.Errorf("chat: password MAC of user %d: %w", r.id, err)
		}
	}
	return len(todo), nil
}

// inLockRow runs fn holding the migration lock as a row (MySQL): its DDL
// commits statement by statement, so no transaction can hold a lock across
// it, and GET_LOCK is one node's on a Galera cluster. The row is a lease
// (lockLease), taken over from a process that died holding it once it
// ends; a live holder renews nothing, since migrations take seconds.
func inLockRow(ctx context.Context, db *sql.DB, fn func(querier) error) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS chat_migration_lock (id INTEGER PRIMARY KEY, holder VARCHAR(64) NOT NULL, expires BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	var b [8]byte
	rand.Read(b[:])
	me := hex.EncodeToString(b[:])
	for {
		now := time.Now()
		_, err := db.ExecContext(ctx, `INSERT INTO chat_migration_lock (id, holder, expires) VALUES (1, ?, ?)`, me, now.Add(lockLease).UnixMilli())
		if err != nil && field.Duplicate(err) {
			_, err = db.ExecContext(ctx, `UPDATE chat_migration_lock SET holder = ?, expires = ? WHERE id = 1 AND expires < ?`, me, now.Add(lockLease).UnixMilli(), now.UnixMilli())
		}
		if err != nil && !field.Retryable(err) {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		var holder string
		if err := db.QueryRowContext(ctx, `SELECT holder FROM chat_migration_lock WHERE id = 1`).Scan(&holder); err == nil && holder == me {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("taking the migration lock: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM chat_migration_lock WHERE id = 1 AND holder = ?`, me)
	return fn(db)
}

// lockLease is how long a migration lock row lasts.
const lockLease = 2 * time.Minute
