// Package subject keeps subjects' own data keys — a user's, a tenant's —
// in the application's database, wrapped by the keyring, so that a column
// declared with [field.PerSubject] seals each subject's values under the
// subject's key, and forgetting a subject erases every one of its values
// by deleting one key.
//
// A [Store] serves one namespace (the subjects of one kind, such as
// "users"). Keys live in the table ward_subject_keys, one row per subject
// and key version, each wrapped by the keyring's primary key under the
// context (namespace, subject, version): a row moved to another subject
// does not unwrap, keyring rotation re-wraps it ([Store.Reseal]), and the
// master key or KMS that guards the keyring file guards every subject key.
// A subject's first key is created when it first seals, insert-if-absent
// and re-read before use, so two processes never seal under two keys.
// Unwrapped keys are cached per process for at most [Config.TTL].
//
// [Store.Forget] deletes a subject's keys and writes an authenticated
// tombstone (ward_subject_tombstones, MAC'd under the keyring's state key)
// and counts it in the database's ledger: from then on every value of the
// subject fails with [field.ErrSubjectErased] — at once in the calling
// process, within the TTL in every other. A key missing without a valid
// tombstone is reported as [field.ErrSubjectKeyMissing], never as erased.
// SECURITY.md states what a forget promises against a database backup.
package subject

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Default table names.
const (
	DefaultKeysTable       = "ward_subject_keys"
	DefaultTombstonesTable = "ward_subject_tombstones"
	DefaultSessionsTable   = "ward_subject_sessions"
)

// Defaults of [Config].
const (
	DefaultTTL        = 30 * time.Second
	DefaultMaxEntries = 100_000
	DefaultTimeout    = 5 * time.Second
)

// MaxSubjectLen bounds a subject ID, in bytes.
const MaxSubjectLen = 256

// What a read takes from the store's tables, which a database writer
// controls: a wrapped key (or its recovery wrap) is some 100 bytes and a
// tombstone's MAC 64 hex digits, so a value past its bound is a writer's.
// It is read as empty (never loaded: [sqltable.Bound]) and fails to unwrap
// or to verify. maxVersions bounds the key versions, or session copies, one
// read of a subject takes.
var (
	wrappedCol  = sqltable.Bound{Col: "wrapped", Max: 4096}
	recoveryCol = sqltable.Bound{Col: "recovery", Max: 4096}
	macCol      = sqltable.Bound{Col: "mac", Max: 256}
	subjectCol  = sqltable.Bound{Col: "subject", Max: MaxSubjectLen}
)

const maxVersions = 4096

// Config configures a [Store].
type Config struct {
	// DB is the application's database; Dialect its SQL flavour.
	DB      *sql.DB
	Dialect field.Dialect
	// Keyring wraps subject keys and MACs tombstones.
	Keyring *keyring.Keyring
	// Ledger counts forgotten subjects; required by Forget and Audit.
	Ledger *ledger.Ledger
	// Journal, if set, records every forget outside the database before
	// it commits, so that a recovery after the database went back in
	// time re-applies it (package forgetlog; docs/OPERATIONS.md). Without
	// a synchronous standby, a forget without it can come back. It also
	// records each subject going private, and the store then never seals
	// for that subject under a keyring-wrapped key ([ErrPrivateKeysChanged]),
	// whatever a database writer does to its rows. It needs Ledger.
	Journal *forgetlog.Journal
	// Namespace names the kind of subject ("users", "tenants"); it is
	// bound into every wrapped key and tombstone.
	Namespace string
	// Algorithm of new subject keys (default AES-256-GCM).
	Algorithm keyring.Algorithm
	// TTL bounds how long an unwrapped key, or the knowledge that a
	// subject has one, stays in this process's cache (default 30 s): a
	// forget made by another process takes effect here within it.
	TTL time.Duration
	// MaxEntries bounds the cache (default 100,000 keys).
	MaxEntries int
	// Timeout bounds each database lookup made while sealing or opening
	// (default 5 s): Column.Seal and Open take no context.
	Timeout time.Duration
	// KeysTable, TombstonesTable and SessionsTable name the tables
	// (defaults above).
	KeysTable, TombstonesTable, SessionsTable string
	// Verified, if set, is a ledger state the caller authenticated by
	// other means, whose database ID and marks stand for Ledger's: a
	// recovery, whose ledger is behind its anchor (lifecycle.Recover).
	Verified *ledger.State
}

// Store is a namespace's subject keys. It implements [field.SubjectKeys].
// It is safe for concurrent use.
type Store struct {
	cfg              Config
	keys, tombstones string // quoted table names
	sessions         string
	mu               sync.Mutex
	cache            map[string]*cached   // by subject
	forgotten        map[string]time.Time // subjects this process forgot: Unlocked keys stop at once
	private          map[string]privateEntry
	clock            *clock
	dbID             string // the ledger's database ID, once verified (anchored.go)
	grants           grantedCache
	tombV1Refused    bool          // the ledger refuses v1 tombstones (tombstone.go)
	tombV1Asked      time.Time     // when the ledger was last asked
	ledgerOK         atomic.Int64  // Unix ns of the ledger's last verification (current.go)
	floor            atomic.Uint32 // the namespace's key floor, as last verified (floor.go)
}

// cached are a subject's unwrapped keys. The entry lives at most the TTL
// from when it was made, whatever versions join it meanwhile.
type cached struct {
	keys    map[uint32]*keyring.SubjectKey
	current *keyring.SubjectKey // the newest, for sealing (nil: not read yet)
	newest  uint32              // the newest version known (CurrentVersion)
	expires int64               // on s.clock
}

// Open returns the store of a namespace, creating its tables if missing.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DB == nil || cfg.Keyring == nil || (cfg.Dialect != field.SQLite && cfg.Dialect != field.Postgres && cfg.Dialect != field.MySQL) {
		return nil, errors.New("subject: Config needs DB, Dialect and Keyring")
	}
	if cfg.Namespace == "" || len(cfg.Namespace) > MaxSubjectLen {
		return nil, errors.New("subject: Config needs a Namespace of at most 256 bytes")
	}
	if cfg.Algorithm == keyring.AlgorithmUnknown {
		cfg.Algorithm = keyring.DefaultAlgorithm
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.KeysTable == "" {
		cfg.KeysTable = DefaultKeysTable
	}
	if cfg.TombstonesTable == "" {
		cfg.TombstonesTable = DefaultTombstonesTable
	}
	if cfg.SessionsTable == "" {
		cfg.SessionsTable = DefaultSessionsTable
	}
	s := &Store{cfg: cfg, cache: map[string]*cached{}, forgotten: map[string]time.Time{}, private: map[string]privateEntry{}}
	s.clock = newClock(cfg.TTL)
	if s.clock.done != nil {
		runtime.AddCleanup(s, func(done chan struct{}) { close(done) }, s.clock.done)
	}
	var err error
	if s.keys, err = cfg.Dialect.Quote(cfg.KeysTable); err != nil {
		return nil, err
	}
	if s.tombstones, err = cfg.Dialect.Quote(cfg.TombstonesTable); err != nil {
		return nil, err
	}
	if s.sessions, err = cfg.Dialect.Quote(cfg.SessionsTable); err != nil {
		return nil, err
	}
	if err := sqltable.RequirePrimary(ctx, cfg.DB, cfg.Dialect.String()); err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	if err := s.create(ctx); err != nil {
		return nil, err
	}
	if err := s.chainV1PrivateAtOpen(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// durable asks for tx's commit to wait for synchronous standbys
// ([sqltable.Durable]): a forget or a change of who holds a key is
// acknowledged only once a failover cannot lose it.
func (s *Store) durable(ctx context.Context, tx *sql.Tx) error {
	if err := sqltable.Durable(ctx, tx, s.cfg.Dialect.String()); err != nil {
		return fmt.Errorf("subject: %w", err)
	}
	return nil
}

// create makes the tables. first is 1 on a subject's first key and NULL on
// later versions, so that the UNIQUE constraint lets exactly one process
// create a subject's first key. held says who can unwrap a key: 0 the
// keyring, 1 only the user (user-held keys), 2 nobody any more (a reset
// without recovery); recovery is the optional recovery wrap of a
// user-held key.
func (s *Store) create(ctx context.Context) error {
	e := s.cfg.Dialect.String()
	blob, id := sqltable.Blob(e), sqltable.KeyText(e, MaxSubjectLen) // namespaces and subjects: at most MaxSubjectLen bytes
	for _, c := range []struct{ table, ddl string }{
		{s.keys, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
			namespace %[2]s NOT NULL, subject %[2]s NOT NULL, version BIGINT NOT NULL,
			first SMALLINT, wrapped %[3]s NOT NULL, created_at BIGINT NOT NULL,
			held SMALLINT NOT NULL DEFAULT 0, recovery %[3]s, scoped %[3]s,
			PRIMARY KEY (namespace, subject, version), UNIQUE (namespace, subject, first))`, s.keys, id, blob)},
		{s.tombstones, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
			namespace %[2]s NOT NULL, subject %[2]s NOT NULL, forgotten_at BIGINT NOT NULL,
			epoch BIGINT NOT NULL, mac %[3]s NOT NULL, PRIMARY KEY (namespace, subject))`, s.tombstones, id, sqltable.LongText(e))},
		{s.sessions, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
			namespace %[2]s NOT NULL, session %[2]s NOT NULL, subject %[2]s NOT NULL, version BIGINT NOT NULL,
			wrapped %[3]s NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (namespace, session, version))`, s.sessions, id, blob)},
	} {
		if err := sqltable.Create(ctx, s.cfg.DB, c.table, c.ddl); err != nil {
			return fmt.Errorf("subject: creating tables: %w", err)
		}
	}
	return s.addScopedColumn(ctx)
}

// Namespace returns the store's namespace.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// wrapContext binds a wrapped key to its namespace, subject and version.
func (s *Store) wrapContext(subject string, version uint32) []byte {
	b := binary.AppendUvarint(nil, uint64(len(s.cfg.Namespace)))
	b = append(b, s.cfg.Namespace...)
	b = binary.AppendUvarint(b, uint64(len(subject)))
	b = append(b, subject...)
	return binary.BigEndian.AppendUint32(b, version)
}

func checkSubject(subject string) error {
	if subject == "" || len(subject) > MaxSubjectLen {
		return fmt.Errorf("subject: a subject ID must have 1 to %d bytes", MaxSubjectLen)
	}
	return nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.Timeout)
}

// SealingKey returns the subject's current key, creating its first key if
// it has none (field.SubjectKeys).
func (s *Store) SealingKey(subject string) (*keyring.SubjectKey, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	now := s.clock.now()
	s.mu.Lock()
	if c, ok := s.cache[subject]; ok && now < c.expires && c.current != nil {
		k := c.current
		s.mu.Unlock()
		return k, nil
	}
	s.mu.Unlock()
	ctx, cancel := s.ctx()
	defer cancel()
	return s.sealingKey(ctx, subject)
}

func (s *Store) sealingKey(ctx context.Context, subject string) (*keyring.SubjectKey, error) {
	for range 2 {
		version, wrapped, h, err := s.newest(ctx, subject)
		if err != nil {
			return nil, err
		}
		if wrapped != nil {
			if err := s.checkNotForgotten(ctx, subject); err != nil {
				return nil, err
			}
			if err := s.heldError(subject, h); err != nil {
				return nil, err
			}
			if err := s.refuseKeyringKey(ctx, subject); err != nil {
				return nil, err
			}
			if version < s.floor.Load() {
				// Under the floor a revocation raised: a key the revoked
				// grant's holder may have kept (its newer versions deleted,
				// or the table restored from before). Seal under a new one.
				if _, err := s.insertVersions(ctx, []keyRow{{subject: subject, version: int64(version)}}); err != nil {
					return nil, err
				}
				continue
			}
			sk, err := s.unwrapAndCache(subject, version, wrapped, true)
			if err != nil {
				return nil, err
			}
			// Before it seals: a grant of the column must open what it seals.
			if err := s.fillScoped(ctx, subject, sk); err != nil {
				return nil, err
			}
			return sk, nil
		}
		// No key: a first seal, unless the subject was forgotten (or its
		// keys deleted by a database writer, which only an audit of
		// values can tell; the new key has a fresh random version, so
		// older values report ErrSubjectKeyMissing, not a wrong key).
		if err := s.checkNotForgotten(ctx, subject); err != nil {
			return nil, err
		}
		if err := s.refuseKeyringKey(ctx, subject); err != nil {
			return nil, err
		}
		if err := s.createFirst(ctx, subject); err != nil {
			return nil, err
		}
		// Re-read: another process may have created it first.
	}
	return nil, fmt.Errorf("subject: %s/%s: the first key vanished while it was created", s.cfg.Namespace, subject)
}

// newest returns the subject's newest key row, or nil wrapped if none.
func (s *Store) newest(ctx context.Context, subject string) (uint32, []byte, held, error) {
	p := s.cfg.Dialect.Placeholder
	var version int64
	var wrapped []byte
	var h held
	var tooLong, standby bool
	if err := s.ledgerChecked(ctx); err != nil {
		return 0, nil, h, err
	}
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT version, %s, held, %s, %s FROM %s WHERE namespace = %s AND subject = %s ORDER BY version DESC LIMIT 1`,
		wrappedCol.Value(), sqltable.TooLong(wrappedCol), s.standbyColumn(), s.keys, p(1), p(2)), s.cfg.Namespace, subject).Scan(&version, &wrapped, &h, &tooLong, &standby)
	if err == nil && standby {
		return 0, nil, h, s.onStandby()
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, 0, nil
	}
	if err != nil {
		return 0, nil, 0, fmt.Errorf("subject: reading the key of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	if version <= 0 || version > 1<<32-1 {
		return 0, nil, 0, fmt.Errorf("%w: %s/%s: key version %d out of range", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, version)
	}
	if tooLong {
		return 0, nil, 0, fmt.Errorf("%w: %s/%s: a stored key of more than %d bytes", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, wrappedCol.Max)
	}
	return uint32(version), wrapped, h, nil
}

// held says who can unwrap a stored key.
type held int16

const (
	heldByKeyring held = 0 // wrapped by the keyring
	heldByUser    held = 1 // wrapped only under a key from the user's password
	heldLost      held = 2 // a user-held key whose password was reset without recovery
)

// heldError is the error for a key the keyring cannot unwrap.
func (s *Store) heldError(subject string, h held) error {
	switch h {
	case heldByKeyring:
		return nil
	case heldByUser:
		return fmt.Errorf("%w: %s/%s", field.ErrSubjectLocked, s.cfg.Namespace, subject)
	case heldLost:
		return fmt.Errorf("%w: %s/%s", field.ErrSubjectKeyLost, s.cfg.Namespace, subject)
	}
	return fmt.Errorf("%w: %s/%s: unknown holder %d", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, h)
}

// createFirst inserts a first key for the subject unless one exists.
func (s *Store) createFirst(ctx context.Context, subject string) error {
	version := s.firstVersion()
	sk, err := keyring.NewSubjectKey(s.cfg.Algorithm, version)
	if err != nil {
		return err
	}
	defer sk.Destroy()
	wrapped, err := s.cfg.Keyring.WrapSubjectKey(sk, s.wrapContext(subject, version))
	if err != nil {
		return fmt.Errorf("subject: wrapping a key for %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	p := s.cfg.Dialect.Placeholder
	ins, skip := sqltable.IfAbsent(s.cfg.Dialect.String())
	_, err = s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`%s %s (namespace, subject, version, first, wrapped, created_at) VALUES (%s, %s, %s, 1, %s, %s)%s`,
		ins, s.keys, p(1), p(2), p(3), p(4), p(5), skip), s.cfg.Namespace, subject, int64(version), wrapped, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("subject: storing the key of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return nil
}

// OpeningKey returns the subject's key of a version (field.SubjectKeys).
func (s *Store) OpeningKey(subject string, version uint32) (*keyring.SubjectKey, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	now := s.clock.now()
	s.mu.Lock()
	if c, ok := s.cache[subject]; ok && now < c.expires {
		if k, ok := c.keys[version]; ok {
			s.mu.Unlock()
			return k, nil
		}
	}
	s.mu.Unlock()
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.ledgerChecked(ctx); err != nil {
		return nil, err
	}
	p := s.cfg.Dialect.Placeholder
	var wrapped []byte
	var h held
	var tooLong, standby bool
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s, held, %s, %s FROM %s WHERE namespace = %s AND subject = %s AND version = %s`,
		wrappedCol.Value(), sqltable.TooLong(wrappedCol), s.standbyColumn(), s.keys, p(1), p(2), p(3)), s.cfg.Namespace, subject, int64(version)).Scan(&wrapped, &h, &tooLong, &standby)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("subject: reading the key of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	if err == nil && standby {
		return nil, s.onStandby()
	}
	// A tombstone wins over a key row: a row put back from a backup after
	// a forget does not bring the subject back.
	if err := s.checkNotForgotten(ctx, subject); err != nil {
		return nil, err
	}
	if tooLong {
		return nil, fmt.Errorf("%w: %s/%s version %d: a stored key of more than %d bytes", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, version, wrappedCol.Max)
	}
	if wrapped == nil {
		return nil, fmt.Errorf("%w: %s/%s version %d", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, version)
	}
	if err := s.heldError(subject, h); err != nil {
		return nil, err
	}
	return s.unwrapAndCache(subject, version, wrapped, false)
}

func (s *Store) unwrapAndCache(subject string, version uint32, wrapped []byte, current bool) (*keyring.SubjectKey, error) {
	sk, err := s.cfg.Keyring.UnwrapSubjectKey(wrapped, s.wrapContext(subject, version))
	if err != nil {
		return nil, fmt.Errorf("subject: unwrapping the key of %s/%s version %d: %w", s.cfg.Namespace, subject, version, err)
	}
	if sk.Version() != version {
		return nil, fmt.Errorf("subject: %s/%s: the wrapped key names version %d, its row %d: %w", s.cfg.Namespace, subject, sk.Version(), version, keyring.ErrMalformed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.entryLocked(subject)
	c.keys[version] = sk
	if current && (c.current == nil || version >= c.current.Version()) {
		c.current = sk
		c.newest = max(c.newest, version)
	}
	return sk, nil
}

// entryLocked returns the subject's live cache entry, making a fresh one
// (and room for it) if it has none or its entry expired.
func (s *Store) entryLocked(subject string) *cached {
	now := s.clock.now()
	c, ok := s.cache[subject]
	if !ok || now >= c.expires {
		if len(s.cache) >= s.cfg.MaxEntries {
			s.evictLocked(now)
		}
		c = &cached{keys: map[uint32]*keyring.SubjectKey{}, expires: now + int64(s.cfg.TTL)}
		s.cache[subject] = c
	}
	return c
}

// evictLocked drops expired entries, then (still full) an arbitrary
// quarter of the cache: a bound, not a policy.
func (s *Store) evictLocked(now int64) {
	for k, c := range s.cache {
		if now >= c.expires {
			delete(s.cache, k)
		}
	}
	drop := len(s.cache) - s.cfg.MaxEntries*3/4
	for k := range s.cache {
		if drop <= 0 {
			break
		}
		delete(s.cache, k)
		drop--
	}
}

// Purge drops a subject's keys from this process's cache.
func (s *Store) Purge(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, subject)
	delete(s.private, subject)
}

// forgottenHere reports whether this process forgot the subject, for keys
// unlocked before the forget ([Unlocked]).
func (s *Store) forgottenHere(subject string) error {
	s.mu.Lock()
	at, ok := s.forgotten[subject]
	s.mu.Unlock()
	if ok {
		return &ErasedError{Namespace: s.cfg.Namespace, Subject: subject, At: at.UTC().Truncate(time.Second)}
	}
	return nil
}

// checkNotForgotten returns an error matching field.ErrSubjectErased if a
// tombstone with a valid MAC names the subject. A tombstone that fails its
// MAC was planted or altered by a database writer: it is reported as such,
// and the subject is treated as not erased only in that it is not
// reported as erased — the caller still gets an error.
func (s *Store) checkNotForgotten(ctx context.Context, subject string) error {
	t, err := s.tombstone(ctx, subject)
	if err != nil || t == nil {
		return err
	}
	if t.valid {
		return &ErasedError{Namespace: s.cfg.Namespace, Subject: subject, At: time.Unix(t.at, 0).UTC()}
	}
	return fmt.Errorf("%w: %s/%s: a tombstone fails its MAC (planted or altered by a database writer)", ErrTombstoneTampered, s.cfg.Namespace, subject)
}

type tombstone struct {
	at    int64
	valid bool
}

func (s *Store) tombstone(ctx context.Context, subject string) (*tombstone, error) {
	return s.tombstoneIn(ctx, s.cfg.DB, subject)
}

// tombstoneIn is tombstone read through q (the store's database, or a
// forget's transaction).
func (s *Store) tombstoneIn(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, subject string) (*tombstone, error) {
	p := s.cfg.Dialect.Placeholder
	var at, epoch int64
	var macHex string
	err := q.QueryRowContext(ctx, fmt.Sprintf(`SELECT forgotten_at, epoch, %s FROM %s WHERE namespace = %s AND subject = %s`,
		macCol.Value(), s.tombstones, p(1), p(2)), s.cfg.Namespace, subject).Scan(&at, &epoch, &macHex)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("subject: reading the tombstone of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return &tombstone{at: at, valid: s.verifyTombstone(ctx, subject, at, epoch, macHex)}, nil
}

// IsForgotten reports whether the subject has a tombstone that verifies.
// A tombstone that fails its MAC (planted or altered by a database writer)
// does not count: an application deletes a forgotten user's rows only on
// a tombstone it has authenticated.
func (s *Store) IsForgotten(ctx context.Context, subject string) (bool, error) {
	t, err := s.tombstone(ctx, subject)
	return t != nil && t.valid, err
}

// ErrTombstoneTampered means a tombstone row fails its MAC, or the
// ledger counts more forgotten subjects than valid tombstones remain
// ([Store.Audit]).
var ErrTombstoneTampered = errors.New("subject: a tombstone was altered, planted or deleted")

// ErrCommitUnknown means the database did not confirm a commit: it may
// have been applied (Store.Forget).
var ErrCommitUnknown = sqltable.ErrCommitUnknown

// ErasedError reports a forgotten subject. It matches
// [field.ErrSubjectErased].
type ErasedError struct {
	Namespace, Subject string
	At                 time.Time
}

func (e *ErasedError) Error() string {
	return fmt.Sprintf("%v: %s/%s was forgotten at %s", field.ErrSubjectErased, e.Namespace, e.Subject, e.At.Format(time.RFC3339))
}

// Is matches field.ErrSubjectErased.
func (e *ErasedError) Is(target error) bool { return target == field.ErrSubjectErased }

// forgetCounterPrefix names the ledger counters of forgets, one per
// namespace.
const forgetCounterPrefix = "subject.forgotten:"

// counterName is the ledger counter of a namespace's forgotten subjects.
func (s *Store) counterName() string { return ForgetCounter(s.cfg.Namespace) }

// ForgetCounter names the ledger counter ([ledger.State.Counters]) of a
// namespace's forgotten subjects.
func ForgetCounter(namespace string) string { return forgetCounterPrefix + namespace }

// Forget erases a subject: in one transaction it writes an authenticated
// tombstone, deletes every key of the subject and counts the forget in
// the ledger (so a forget is counted exactly once, whatever the crash
// point), then drops the subject from this process's cache. Other
// processes see it within their cache TTL. Rows sealed under the deleted
// keys may stay (they no longer open) and be deleted lazily. Forgetting a
// subject twice is not an error; a subject never seen is forgotten too
// (its first seal is then refused). An error matching [ErrCommitUnknown]
// means the database did not confirm the commit (the connection failed,
// or ctx ended while PostgreSQL waited for its synchronous standby): the
// forget may have been applied; forgetting again finishes it either way.
func (s *Store) Forget(ctx context.Context, subject string) error {
	_, err := s.ForgetKeys(ctx, subject)
	return err
}

// ForgetKeys is Forget, and also returns how many key versions it deleted:
// 0 for a subject that never had a key (its tombstone is written all the
// same, so that no key is created for it later).
//
// A transaction the database rolled back for a concurrent one
// ([field.Retryable]: a deadlock, or on a Galera cluster a transaction
// that lost certification to one on another node) is run again, up to
// forgetAttempts times, with a short pause that ends with ctx. A caller of
// ForgetIn retries its own transaction so.
func (s *Store) ForgetKeys(ctx context.Context, subject string) (int64, error) {
	for attempt := 1; ; attempt++ {
		keys, err := s.forgetOnce(ctx, subject)
		if !field.Retryable(err) || attempt == forgetAttempts {
			return keys, err
		}
		select {
		case <-ctx.Done():
			return keys, errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// forgetAttempts bounds the runs of a forget that keeps losing to
// concurrent writers (MySQL's 1213).
const forgetAttempts = 8

func (s *Store) forgetOnce(ctx context.Context, subject string) (int64, error) {
	if err := checkSubject(subject); err != nil {
		return 0, err
	}
	// The ledger first, outside the transaction: on a first start it is
	// created and recorded through its own connection, which a SQLite
	// write transaction (begun IMMEDIATE) would hold off until it ended.
	st, err := s.readyLedger(ctx)
	if err != nil {
		return 0, err
	}
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("subject: forgetting %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	defer tx.Rollback()
	keys, done, err := s.forgetIn(ctx, tx, subject, st)
	if err != nil {
		return 0, err
	}
	if err := sqltable.Commit(ctx, tx); err != nil {
		return 0, fmt.Errorf("subject: forgetting %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return keys, done(ctx)
}

// ForgetIn is Forget within tx, the caller's transaction: deleting an
// account forgets its user and deletes its rows in one transaction, so a
// crash leaves neither a forgotten user with an account nor an account
// deleted without the forget. The tombstone, the key deletion, the count
// in the ledger and (before the commit) the journal record all happen in
// tx. After tx commits, call done: it drops the subject from this
// process's cache and brings the keyring file's anchor up to date. If tx
// does not commit, nothing happened: its journal record remains, off the
// ledger's tally, and neither a recovery nor an audit counts it
// (forgetlog.Records.Settle) — unless the database lost the commits after it
// and its place is unsure, when a recovery forgets the subject, as was
// asked. If tx fails with an
// error [field.Retryable] reports, run the whole transaction again.
//
// On SQLite, where a write transaction locks the whole database, a
// process's first forget may create the ledger's table, and on a database
// with no ledger yet records it, through Config.Ledger's own connection: if tx was begun IMMEDIATE (as dburl
// opens SQLite) that waits for tx until the busy timeout. Record the
// ledger at start ([ledger.Ledger.Record]), or run one Forget, first.
func (s *Store) ForgetIn(ctx context.Context, tx *sql.Tx, subject string) (keys int64, done func(context.Context) error, err error) {
	if err := checkSubject(subject); err != nil {
		return 0, nil, err
	}
	st, err := s.readyLedger(ctx)
	if err != nil {
		return 0, nil, err
	}
	return s.forgetIn(ctx, tx, subject, st)
}

// readyLedger returns the ledger's verified state, recording it on a
// first start (the journal names the database). It is verified first: a
// forget under another database's keyring would write a tombstone nobody
// can verify.
func (s *Store) readyLedger(ctx context.Context) (*ledger.State, error) {
	if s.cfg.Ledger == nil {
		return nil, errors.New("subject: Forget needs Config.Ledger")
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err == nil && st == nil {
		if err = s.cfg.Ledger.Record(ctx, s.cfg.Keyring); err == nil {
			st, err = s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
		}
	}
	return st, err
}

// forgetIn is ForgetIn with the ledger's verified state.
func (s *Store) forgetIn(ctx context.Context, tx *sql.Tx, subject string, st *ledger.State) (keys int64, done func(context.Context) error, err error) {
	s.Purge(subject)
	at := time.Now()
	var anchor func(context.Context) error
	_, keys, err = s.forget(ctx, tx, st.Database, subject, at, func(added int64, versions []uint32) error {
		e := forgetlog.Entry{Database: st.Database, Namespace: s.cfg.Namespace, Subject: subject, At: at, Keys: versions, BindKeys: versions != nil}
		if added > 0 { // counted in the same transaction: never one without the other
			id, err := s.identity(subject)
			if err == nil {
				e.Prev, anchor, err = s.cfg.Ledger.TallyTx(ctx, tx, s.cfg.Keyring, s.counterName(), forgetlog.Item(id, versions))
			}
			if err != nil {
				return fmt.Errorf("subject: counting the forget of %s/%s: %w", s.cfg.Namespace, subject, err)
			}
			e.Chain = true
		}
		if s.cfg.Journal == nil {
			return nil
		}
		// Before the commit: a forget the database loses (a failover's
		// lost tail, a restore) is then always in the journal, with the
		// tally it chains from, which tells a recovery whether it
		// committed.
		if err := s.cfg.Journal.Append(ctx, e); err != nil {
			return fmt.Errorf("subject: %s/%s is not forgotten: %w", s.cfg.Namespace, subject, err)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return keys, func(ctx context.Context) error { return s.forgotNow(ctx, subject, anchor) }, nil
}

// identity is the keyed hash of a subject a ledger's tally counts and a
// journal record names (forgetlog.Identity).
func (s *Store) identity(subject string) ([]byte, error) {
	if s.cfg.Journal != nil {
		return s.cfg.Journal.Identity(s.cfg.Namespace, subject), nil
	}
	return forgetlog.Identity(s.cfg.Keyring, s.cfg.Namespace, subject)
}

// forgotNow is what follows a forget's commit: the cache, the process's
// list of subjects it forgot, and the anchor.
func (s *Store) forgotNow(ctx context.Context, subject string, anchor func(context.Context) error) error {
	s.Purge(subject) // a seal may have refilled it meanwhile
	s.mu.Lock()
	if len(s.forgotten) >= s.cfg.MaxEntries {
		clear(s.forgotten) // a bound: later lookups meet the tombstone anyway
	}
	s.forgotten[subject] = time.Now()
	s.mu.Unlock()
	if err := s.refuseV1WhenNone(ctx); err != nil {
		return fmt.Errorf("subject: %s/%s is forgotten and counted: %w", s.cfg.Namespace, subject, err)
	}
	if err := saveAnchor(ctx, anchor); err != nil {
		return fmt.Errorf("subject: %s/%s is forgotten and counted, but the keyring file's anchor was not updated: %w", s.cfg.Namespace, subject, err)
	}
	return nil
}

// forget writes the tombstone and deletes the subject's keys and sessions
// in tx, made durable; then it calls before with whether the tombstone is
// new (the count, the journal) and the versions of the keys it deleted.
// It returns whether the tombstone is new and how many key versions it
// deleted.
func (s *Store) forget(ctx context.Context, tx *sql.Tx, database, subject string, at time.Time, before func(added int64, versions []uint32) error) (added, keys int64, err error) {
	epoch, mac, err := s.tombstoneMAC(database, subject, at.Unix())
	if err != nil {
		return 0, 0, err
	}
	if err := s.durable(ctx, tx); err != nil {
		return 0, 0, err
	}
	p := s.cfg.Dialect.Placeholder
	ins, skip := sqltable.IfAbsent(s.cfg.Dialect.String())
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`%s %s (namespace, subject, forgotten_at, epoch, mac) VALUES (%s, %s, %s, %s, %s)%s`,
		ins, s.tombstones, p(1), p(2), p(3), p(4), p(5), skip), s.cfg.Namespace, subject, at.Unix(), epoch, mac)
	if err != nil {
		return 0, 0, fmt.Errorf("subject: writing the tombstone of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	if added, err = res.RowsAffected(); err != nil {
		return 0, 0, err
	}
	if added == 0 { // a tombstone stands: the subject's own, or a writer's
		if added, err = s.replaceForgedTombstone(ctx, tx, subject, at.Unix(), epoch, mac); err != nil {
			return 0, 0, err
		}
	}
	versions, err := s.keyVersions(ctx, tx, subject)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range []string{s.keys, s.sessions} {
		res, err := tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE namespace = %s AND subject = %s`, t, p(1), p(2)), s.cfg.Namespace, subject)
		if err != nil {
			return 0, 0, fmt.Errorf("subject: deleting the keys of %s/%s: %w", s.cfg.Namespace, subject, err)
		}
		if t == s.keys {
			keys, _ = res.RowsAffected()
		}
	}
	if before != nil {
		if err := before(added, versions); err != nil {
			return 0, 0, err
		}
	}
	return added, keys, nil
}

// Tombstoned lists the subjects whose tombstones verify, and up to 10 of
// those whose tombstones fail their MAC (planted or altered).
func (s *Store) Tombstoned(ctx context.Context) (valid, bad []string, err error) {
	p := s.cfg.Dialect.Placeholder
	rows, err := s.cfg.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s, forgotten_at, epoch, %s FROM %s WHERE namespace = %s`, subjectCol.Value(), macCol.Value(), s.tombstones, p(1)), s.cfg.Namespace)
	if err != nil {
		return nil, nil, fmt.Errorf("subject: reading tombstones: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sub, mac string
		var at, epoch int64
		if err := rows.Scan(&sub, &at, &epoch, &mac); err != nil {
			return valid, bad, fmt.Errorf("subject: reading tombstones: %w", err)
		}
		if s.verifyTombstone(ctx, sub, at, epoch, mac) {
			valid = append(valid, sub)
		} else if len(bad) < 10 {
			bad = append(bad, sub)
		}
	}
	if err := rows.Err(); err != nil {
		return valid, bad, fmt.Errorf("subject: reading tombstones: %w", err)
	}
	return valid, bad, nil
}

// Reapply forgets a subject again, as it was at a given time, without
// verifying or counting in the ledger: for a recovery after the database
// went back in time (package lifecycle), which has verified the ledger
// against the keyring's custody, names its database (the tombstone is
// bound to it) and counts the tombstones itself. It
// returns whether it wrote a new tombstone and how many key versions it
// deleted.
func (s *Store) Reapply(ctx context.Context, database, subject string, at time.Time) (added bool, keys int64, err error) {
	if err := checkSubject(subject); err != nil {
		return false, 0, err
	}
	s.Purge(subject)
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, 0, fmt.Errorf("subject: forgetting %s/%s again: %w", s.cfg.Namespace, subject, err)
	}
	defer tx.Rollback()
	n, keys, err := s.forget(ctx, tx, database, subject, at, nil)
	if err == nil {
		err = sqltable.Commit(ctx, tx)
	}
	if err != nil {
		return false, 0, fmt.Errorf("subject: forgetting %s/%s again: %w", s.cfg.Namespace, subject, err)
	}
	return n > 0, keys, nil
}

// Subjects lists the subjects of the namespace that hold a key or a
// session, sorted: those a recovery checks against the journal.
func (s *Store) Subjects(ctx context.Context) ([]string, error) {
	p := s.cfg.Dialect.Placeholder
	rows, err := s.cfg.DB.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT %s FROM (SELECT subject FROM %s WHERE namespace = %s UNION SELECT subject FROM %s WHERE namespace = %s) AS s ORDER BY 1`,
		subjectCol.Value(), s.keys, p(1), s.sessions, p(2)), s.cfg.Namespace, s.cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("subject: listing subjects: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sub string
		if err := rows.Scan(&sub); err != nil {
			return nil, fmt.Errorf("subject: listing subjects: %w", err)
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}

// Audit compares the tombstones with the ledger's count of forgotten
// subjects: it returns the number of valid tombstones, and an error
// matching [ErrTombstoneTampered] if any fails its MAC or fewer remain
// than the ledger counts (a database writer deleted one). More tombstones
// than counted means a forget crashed before counting; Audit reports it
// without error. With a journal (Config.Journal) it also reports every
// subject that holds a key while the journal records its forget and no
// valid tombstone stands — which a database writer cannot hide by putting
// back an older ledger past an anchor the keyring file could not save. A
// journaled subject with neither key nor tombstone (lost in a recovery)
// left nothing to forget, and is not reported.
func (s *Store) Audit(ctx context.Context) (valid int, counted uint64, err error) {
	if s.cfg.Ledger == nil {
		return 0, 0, errors.New("subject: Audit needs Config.Ledger")
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err != nil {
		return 0, 0, err
	}
	if st != nil {
		counted = st.Counters[s.counterName()]
	}
	subjects, bad, err := s.Tombstoned(ctx)
	valid = len(subjects)
	if err != nil {
		return valid, counted, err
	}
	if len(bad) > 0 {
		return valid, counted, fmt.Errorf("%w: tombstones of %q fail their MAC", ErrTombstoneTampered, bad)
	}
	if uint64(valid) < counted {
		return valid, counted, fmt.Errorf("%w: the ledger counts %d forgotten subjects in %s, %d tombstones remain", ErrTombstoneTampered, counted, s.cfg.Namespace, valid)
	}
	if s.cfg.Journal != nil && st != nil {
		back, err := s.journaledBack(ctx, st, subjects)
		if err != nil {
			return valid, counted, err
		}
		if back > 0 {
			return valid, counted, fmt.Errorf("%w: %d subjects of %s hold keys though the forget journal records their forget and no tombstone stands (run ward ledger recover with the journal)", ErrTombstoneTampered, back, s.cfg.Namespace)
		}
	}
	return valid, counted, nil
}

// KeyVersions lists the versions of a subject's key rows (what binds a
// forget journal's record to the subject it forgot: forgetlog.Records.Forgets);
// nil for more than 4,096.
func (s *Store) KeyVersions(ctx context.Context, subject string) ([]uint32, error) {
	return s.keyVersions(ctx, s.cfg.DB, subject)
}

// keyVersions is KeyVersions through q, a transaction or the database.
func (s *Store) keyVersions(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, subject string) ([]uint32, error) {
	p := s.cfg.Dialect.Placeholder
	rows, err := q.QueryContext(ctx, fmt.Sprintf(`SELECT version FROM %s WHERE namespace = %s AND subject = %s ORDER BY version LIMIT %d`, s.keys, p(1), p(2), maxVersions+1), s.cfg.Namespace, subject)
	if err != nil {
		return nil, fmt.Errorf("subject: reading the key versions of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	defer rows.Close()
	out := []uint32{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, uint32(v))
	}
	if len(out) > maxVersions {
		return nil, rows.Err() // more than a subject has (a database writer's): any record of the ID binds them
	}
	return out, rows.Err()
}

// journaledBack counts the subjects holding a key whose forget the journal
// records as committed (on the ledger's tally, or from before tallies)
// and binds by identity (Journaled), of which tombstoned holds no valid
// tombstone.
func (s *Store) journaledBack(ctx context.Context, st *ledger.State, tombstoned []string) (int, error) {
	recs, err := forgetlog.Read(s.cfg.Keyring, st.Database, s.cfg.Journal.Dir())
	if err != nil {
		return 0, fmt.Errorf("subject: reading the forget journal: %w", err)
	}
	recs.Settle(s.cfg.Namespace, st.Tally(s.counterName()), st.Tally(s.counterName()))
	forgotten, _, err := s.Journaled(ctx, recs)
	if err != nil {
		return 0, err
	}
	back := 0
	for _, f := range forgotten {
		if !slices.Contains(tombstoned, f) {
			back++
		}
	}
	return back, nil
}

// Journaled sorts the subjects of the namespace that hold a key or a
// session and whose forget the journal records name (settled first:
// forgetlog.Records.Settle): forgotten are those the records forget by
// identity (a key within the versions a record names, or a record of the
// ID alone); recycled those whose keys were all created after the records'
// forgets — a new subject that received a forgotten one's ID after a
// restore, which is not forgotten again.
func (s *Store) Journaled(ctx context.Context, recs *forgetlog.Records) (forgotten, recycled []string, err error) {
	if recs.Count(s.cfg.Namespace) == 0 {
		return nil, nil, nil
	}
	holders, err := s.Subjects(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range holders {
		if _, ok := recs.Forgotten(s.cfg.Namespace, h); !ok {
			continue
		}
		versions, err := s.KeyVersions(ctx, h)
		if err != nil {
			return nil, nil, err
		}
		if recs.Forgets(s.cfg.Namespace, h, versions) {
			forgotten = append(forgotten, h)
		} else {
			recycled = append(recycled, h)
		}
	}
	return forgotten, recycled, nil
}

// core is the keyring's mechanism: its state MACs (tombstones).
func core(kr *keyring.Keyring) *keycore.Keyring { return (*keycore.Keyring)(kr) }
