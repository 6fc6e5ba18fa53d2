// Package ledger keeps, in the database a keyring protects, an
// authenticated record of that database's security state: which keyring
// its values are sealed under, which key IDs they may use and in what
// state, the columns ward seals into, named marks and counters that must
// not go backwards (subjects forgotten). The keyring file anchors every
// write ([Anchor]), so a database writer can neither forge the
// record nor put an older copy back unnoticed.
package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
)

// DefaultTable is the table a [Ledger] keeps its state in when none
// is named.
const DefaultTable = "ward_ledger"

// LegacyTable is where releases before the authenticated ledger kept
// an unauthenticated list of key IDs. [Ledger.Adopt] takes it over once;
// nothing else reads it.
const LegacyTable = "ward_keyring_ledger"

// maxBody caps the ledger state read back from a database.
const maxBody = 1 << 20

// Ledger is one database's authenticated record of which keyring its
// values are sealed under, the key IDs they may use with their states, the
// highest keyring generation seen, named marks (a migration ran) and a
// counter. It is a single row, MAC'd under the keyring's newest state key
// (a state key of the keyring file: a copy of the file from before
// a key change cannot forge it) and rewritten by compare-and-swap on the
// counter.
//
// A MAC proves what the row says, not that it is there, so every write is
// also remembered outside the database, in the keyring file's anchor for
// the database ([Anchor]). A service checks the ledger when it
// starts and before it writes: it refuses a keyring that lacks a recorded
// key ID, belongs to another database, or is older than a generation
// seen ([*keyring.RollbackError]); and it refuses a ledger that was
// altered, deleted while the keyring anchors the database, or put back
// from an older copy.
type Ledger struct {
	// DB is the database.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect field.Dialect
	// Table is the ledger table (default DefaultTable), created if
	// missing.
	Table string

	created atomic.Bool // the table exists: create once per Ledger
	primary sqltable.PrimaryOnce

	// tx, when set (CountTx), carries every read and write of the ledger
	// in the caller's transaction; the state it wrote waits in pending
	// for the anchor, saved once tx has committed.
	tx      *sql.Tx
	pending *State
	// share makes the read in tx a shared locking read (Indexer.WriteTx):
	// a ledger write waits for tx's commit.
	share bool
	// via, when set (Indexer.WriteIn), carries the read as tx does, for
	// a transaction the caller reaches through an ORM's handle.
	via Querier
}

// Querier runs a query in a transaction the caller holds: a *sql.Tx, or
// an ORM's handle on one (the client of an ent transaction generated
// with the sql/execquery feature).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rowScanner is a query's one row: a *sql.Row, or the first of a
// Querier's rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// firstRow scans the first row of a query through q, as a *sql.Row does
// (sql.ErrNoRows for none).
type firstRow struct {
	q     Querier
	ctx   context.Context
	query string
}

func (r firstRow) Scan(dest ...any) error {
	rows, err := r.q.QueryContext(r.ctx, r.query)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

// ErrStandby means the ledger's database is a PostgreSQL standby: ward
// reads and writes its own tables on the primary only, since a standby's
// copy lags (a ledger older than its anchor would read as a replay).
var ErrStandby = sqltable.ErrStandby

// ErrReadOnly means the ledger's database is a read-only MySQL or MariaDB
// server (a replica): as ErrStandby.
var ErrReadOnly = sqltable.ErrReadOnly

// ErrCommitUnknown means the database did not confirm the commit of a
// ledger write (the connection failed, or the caller stopped waiting for
// a synchronous standby): it may have been applied; read the ledger again.
var ErrCommitUnknown = sqltable.ErrCommitUnknown

// ErrNodeNotReady means the ledger could not be read because a Galera
// node cannot serve now (outside the primary component, error 1047, or
// reconfiguring after a node left, 1205): nothing was decided.
var ErrNodeNotReady = sqltable.ErrNodeNotReady

// ErrNotStrict means the ledger's database is a MySQL or MariaDB server,
// or a session of one, whose sql_mode is not strict: a value too long for
// its column would be cut short with a warning instead of refused, and a
// ciphertext cut short is lost. Every process that checks the ledger at
// start refuses such a database; the error names the setting.
var ErrNotStrict = sqltable.ErrNotStrict

// ErrNoCausalReads means the ledger's database is a Galera node whose
// connection reads without waiting for the other nodes' commits
// (wsrep_sync_wait lacks bit 1): a forget or a ledger record another node
// acknowledged could be missed.
var ErrNoCausalReads = sqltable.ErrNoCausalReads

// onPrimary returns an error matching [ErrStandby] when l.DB reaches a
// standby (asked once per Ledger).
func (l *Ledger) onPrimary(ctx context.Context) error {
	if err := l.primary.Check(ctx, l.DB, l.Dialect.String()); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// State is what a ledger records.
type State struct {
	// Database is the database's ID, made at the ledger's first write; the
	// keyring file anchors the database under it.
	Database string `json:"database"`
	// Keyring is the ID of the keyring the database's values are sealed
	// under.
	Keyring string `json:"keyring"`
	// Keys are the key IDs values may use, with their state when last
	// recorded, sorted by ID.
	Keys []Key `json:"keys"`
	// Generation is the highest keyring generation recorded.
	Generation uint64 `json:"generation"`
	// Counter counts the ledger's writes.
	Counter uint64 `json:"counter"`
	// Epoch names the state key the ledger is MAC'd under.
	Epoch uint64 `json:"epoch"`
	// Marks are named facts recorded with [Ledger.Mark], sorted.
	Marks []string `json:"marks,omitempty"`
	// Columns are the ward columns values are sealed into, recorded with
	// [Ledger.RecordColumns] when a process or job first seals into them,
	// sorted by table and column: what a fleet rotation re-encrypts.
	Columns []Column `json:"columns,omitempty"`
	// Counters are named counts that must not go backwards, such as the
	// subjects forgotten in a namespace ([Ledger.Count]).
	Counters map[string]uint64 `json:"counters,omitempty"`
	// Tallies name what counters count by identity ([Ledger.TallyTx]):
	// for a namespace's forgets, a hash chain over the keyed hashes of the
	// subjects forgotten, anchored with the rest. A tally starts at its
	// counter's count when first added to (FORMAT.md, "Tallies").
	Tallies map[string]Tally `json:"tallies,omitempty"`
	// Recheck names the columns ("table.column") whose values may have
	// gone back to an older form (plaintext, an older key) because the
	// database went back in time: a recovery ([Ledger.Recover]) lists
	// them, and each leaves the list when a census finds it done
	// ([Ledger.Rechecked]).
	Recheck []string `json:"recheck,omitempty"`
	// Recoveries record each recovery after the database went back in
	// time, the newest last (at most maxRecoveries).
	Recoveries []Recovery `json:"recoveries,omitempty"`
	// Forms are the forms of stored values (package fleetgate) whose writing
	// waits for, or was opened by, the fleet ([Ledger.ChangeForms]),
	// sorted by name.
	Forms []Form `json:"forms,omitempty"`
	// Expect is how many processes the operator says the fleet runs
	// (ward fleet --expect): a form opens only once at least that many
	// live registered processes read it, for fleets whose older processes
	// never registered. 0: not set.
	Expect int `json:"expect,omitempty"`
	// Grants are the grants issued for the database's columns
	// ([Ledger.RecordGrant]), revoked or not, sorted by ID.
	Grants []Grant `json:"grants,omitempty"`
	// MACs are the columns of row MACs ([field.RowMAC]) recorded with
	// [Ledger.RowMAC], sorted by table and column: what a rotation's
	// re-MAC pass moves to the current integrity epoch.
	MACs []MACColumn `json:"macs,omitempty"`
	// Indexes are the blind indexes v2 recorded with [Ledger.Index],
	// sorted by table, column and name, each with the integrity epoch its
	// values are computed under.
	Indexes []IndexColumn `json:"indexes,omitempty"`

	// extra holds the fields of a newer release, written back unchanged.
	extra map[string]json.RawMessage
}

// RetiredState is the state a ledger records for a retired key
// ([Ledger.Retire]): its material is gone from the keyring on purpose, and
// no value may name it.
const RetiredState = "retired"

// Column describes a ward column as a re-encryption job needs it.
type Column struct {
	Table  string   `json:"table"`
	Column string   `json:"column"`
	Key    string   `json:"key"`            // the row-key column
	Bind   []string `json:"bind,omitempty"` // bound columns, in order
	Text   bool     `json:"text,omitempty"` // the text form ("w4:…", "w3:…")
	// Subject and Namespace describe a column sealed under subject keys
	// (PerSubject): the bound column naming the subject, and the
	// namespace of its keys (field/subject).
	Subject   string `json:"subject,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Kind is "" for a column of ward ciphertexts, or KindPasswordHash
	// for password hashes peppered with keyring keys: no job re-encrypts
	// them, and retiring a key waits until none names it.
	Kind string `json:"kind,omitempty"`
}

// KindPasswordHash is the Kind of a recorded column of password hashes.
const KindPasswordHash = "password-hash"

// ColumnOf describes col for the ledger, with its row-key column.
func ColumnOf(col *field.Column, key string) Column {
	c := Column{Table: col.Table(), Column: col.Name(), Key: key, Bind: slices.Clone(col.Bound()), Text: col.Encoding() == field.Text}
	if keys := col.SubjectKeys(); keys != nil {
		c.Subject = col.SubjectColumn()
		if ns, ok := keys.(interface{ Namespace() string }); ok {
			c.Namespace = ns.Namespace()
		}
	}
	return c
}

func (c Column) equal(o Column) bool {
	return c.Table == o.Table && c.Column == o.Column && c.Key == o.Key && slices.Equal(c.Bind, o.Bind) && c.Text == o.Text &&
		c.Subject == o.Subject && c.Namespace == o.Namespace && c.Kind == o.Kind
}

// Key is one key a ledger records.
type Key struct {
	ID    keyring.KeyID `json:"id"`
	State string        `json:"state"`
}

// Errors of the ledger. Each is refused before anything is written.
var (
	// ErrMissing means the database has no ledger although the
	// keyring file anchors databases: a database writer deleted it, or this
	// is a database the keyring has not served yet ([Ledger.Adopt]).
	ErrMissing = errors.New("ledger: the database has no ledger")
	// ErrNewDatabase means the database has no ledger table at all while
	// the keyring serves other databases: most likely a database new to
	// the keyring ([Ledger.Adopt] with AnotherDatabase). It matches
	// ErrMissing: a dropped table looks the same.
	ErrNewDatabase = fmt.Errorf("%w: it has no ledger table", ErrMissing)
	// ErrNotAdopted means the database holds only the
	// unauthenticated ledger of an earlier release: an operator adopts it
	// once ([Ledger.Adopt], ward ledger adopt).
	ErrNotAdopted = errors.New("ledger: the database's ledger is unauthenticated")
	// ErrTampered means the ledger failed its MAC.
	ErrTampered = errors.New("ledger: the database's ledger was altered")
	// ErrReplayed means the ledger is older than the keyring file's
	// anchor for the database: an older copy was put back.
	ErrReplayed = errors.New("ledger: the database's ledger is older than its anchor")
	// ErrAnchorMissing means the keyring file does not anchor the database
	// its ledger names, although the ledger was written more than once.
	ErrAnchorMissing = errors.New("ledger: the keyring file does not anchor this database")
	// ErrAnchorNotSaved means the ledger was written but the keyring file
	// could not be updated (a service without write access to it): the
	// ledger stays valid, and the anchor catches up at the next write by a
	// process that can save the file.
	ErrAnchorNotSaved = errors.New("ledger: the keyring file's anchor was not updated")
	// ErrAlreadyAdopted means Adopt met a database that already has an
	// authenticated ledger.
	ErrAlreadyAdopted = errors.New("ledger: the database already has an authenticated ledger")
)

// MissingKeysError reports key IDs recorded in the ledger that the keyring
// lacks: values under them would not open. It matches
// [keyring.ErrUnknownKey].
type MissingKeysError struct {
	Keyring string
	IDs     []keyring.KeyID
}

func (e *MissingKeysError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = id.String()
	}
	return fmt.Sprintf("ledger: the database holds values under key IDs %s that keyring %s lacks (wrong or outdated keyring file?)", strings.Join(ids, ", "), e.Keyring)
}

// Is reports whether target is keyring.ErrUnknownKey.
func (e *MissingKeysError) Is(target error) bool { return target == keyring.ErrUnknownKey }

func (l *Ledger) table() (string, error) {
	name := l.Table
	if name == "" {
		name = DefaultTable
	}
	return l.Dialect.Quote(name)
}

// usable reports whether the Ledger has a database of a known dialect.
func (l *Ledger) usable() bool {
	return l.DB != nil && (l.Dialect == field.SQLite || l.Dialect == field.Postgres || l.Dialect == field.MySQL)
}

func (l *Ledger) create(ctx context.Context) (string, error) {
	if !l.usable() {
		return "", errors.New("ledger: Ledger needs DB and Dialect")
	}
	t, err := l.table()
	if err != nil || l.created.Load() {
		return t, err
	}
	if err := l.onPrimary(ctx); err != nil {
		return "", err
	}
	if err := sqltable.Create(ctx, l.DB, t, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body %[2]s NOT NULL, mac %[2]s NOT NULL)`, t, sqltable.LongText(l.Dialect.String()))); err != nil {
		return "", fmt.Errorf("ledger: creating the ledger: %w", err)
	}
	l.created.Store(true)
	return t, nil
}

// stored is a ledger row as read.
type stored struct {
	state   State
	body    string
	mac     string
	counter int64
}

func stateMessage(body string) []byte { return []byte("ward ledger state v1\x00" + body) }

// Read returns the ledger's state as the database holds it, unverified
// (for display: [Ledger.Check] verifies), or nil if it has none.
func (l *Ledger) Read(ctx context.Context) (*State, error) {
	s, err := l.read(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	return &s.state, nil
}

func (l *Ledger) read(ctx context.Context) (*stored, error) {
	// A read never creates the table (a dry run, a look at the ledger):
	// a missing one is no ledger. Writes create it first (update).
	if !l.usable() {
		return nil, errors.New("ledger: Ledger needs DB and Dialect")
	}
	t, err := l.table()
	if err != nil {
		return nil, err
	}
	if err := l.onPrimary(ctx); err != nil {
		return nil, err
	}
	var s stored
	// Within bounds, so that a database writer's huge body or MAC is
	// neither loaded nor read (it is refused by its length).
	body, tag := sqltable.Bound{Col: "body", Max: maxBody}, sqltable.Bound{Col: "mac", Max: 256}
	var size int64
	var tooLong bool
	q, lock := l.queryRow, ""
	if l.tx != nil || l.via != nil {
		if l.Dialect == field.MySQL {
			// In a caller's transaction under MySQL's REPEATABLE READ a
			// plain read sees the transaction's first snapshot, and a
			// compare-and-swap lost to another writer would re-read the
			// same stale row until it gave up: a locking read sees the
			// newest row and holds it to the commit.
			lock = " FOR UPDATE"
		}
		if l.share {
			lock = shareLock(l.Dialect)
		}
	}
	err = q(ctx, fmt.Sprintf(`SELECT counter, octet_length(body), %s, %s, %s FROM %s WHERE id = 1%s`,
		body.Value(), tag.Value(), sqltable.TooLong(body, tag), t, lock)).Scan(&s.counter, &size, &s.body, &s.mac, &tooLong)
	if errors.Is(err, sql.ErrNoRows) || sqltable.Missing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the ledger: %w", sqltable.NodeNotReady(err))
	}
	if tooLong {
		return nil, fmt.Errorf("%w: a %d-byte body, or an overlong MAC", ErrTampered, size)
	}
	if err := json.Unmarshal([]byte(s.body), &s.state); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTampered, err)
	}
	return &s, nil
}

// queryRow runs a query of one row in the caller's transaction (tx, or
// via), or on the pool.
func (l *Ledger) queryRow(ctx context.Context, query string) rowScanner {
	switch {
	case l.via != nil:
		return firstRow{q: l.via, ctx: ctx, query: query}
	case l.tx != nil:
		return l.tx.QueryRowContext(ctx, query)
	}
	return l.DB.QueryRowContext(ctx, query)
}

// Check verifies the ledger against kr, as [Ledger.Verified] does.
func (l *Ledger) Check(ctx context.Context, kr *keyring.Keyring) error {
	_, err := l.Verified(ctx, kr)
	return err
}

// Verified reads and verifies the ledger. It returns nil, nil for a
// database without one if the keyring anchors no database (a first start).
// Otherwise it returns an error matching [keyring.ErrWrongKeyring] (the
// database belongs to another keyring), [ErrTampered],
// [keyring.ErrRollback] (kr is older than a generation or state key
// already seen), [ErrReplayed], [ErrAnchorMissing],
// [ErrMissing], [ErrNotAdopted], or a [*MissingKeysError] (kr
// lacks a recorded key ID).
//
// A keyring loaded from a file that is behind the ledger (another process
// saved a newer file since: a concurrent operator command, a rotation, or
// the database's first anchor, saved after the ledger it anchors was
// written at the generation this process loaded) is read again from its
// file once, which never goes back, before that is called a rollback, a
// missing key or a missing anchor.
func (l *Ledger) Verified(ctx context.Context, kr *keyring.Keyring) (*State, error) {
	st, err := l.verified(ctx, kr)
	var missing *MissingKeysError
	if err != nil && kr.Path() != "" && (errors.Is(err, keyring.ErrRollback) || errors.As(err, &missing) || errors.Is(err, ErrAnchorMissing)) {
		if kr.Reload(ctx) == nil {
			return l.verified(ctx, kr)
		}
	}
	if err == nil && st != nil && st.Epoch == 0 && core(kr).StateEpoch() != 0 && kr.Path() != "" {
		// Accepted under epoch 0 by its anchor (verifyStateMAC): a newer
		// file may have anchored a later epoch since this process read it.
		if kr.Reload(ctx) == nil {
			return l.verified(ctx, kr)
		}
	}
	return st, err
}

// verified is verifiedOnce, read again when the ledger reads as older
// than its anchor: a writer of this process (through another connection,
// or another node of a Galera cluster) may have committed and anchored a
// newer state between the read and the check, which is no replay. A
// ledger put back reads as old again.
func (l *Ledger) verified(ctx context.Context, kr *keyring.Keyring) (*State, error) {
	for attempt := 1; ; attempt++ {
		st, err := l.verifiedOnce(ctx, kr)
		if !errors.Is(err, ErrReplayed) || attempt == replayReads {
			return st, err
		}
	}
}

// replayReads is how often verified reads a ledger that looks replayed.
const replayReads = 3

func (l *Ledger) verifiedOnce(ctx context.Context, kr *keyring.Keyring) (*State, error) {
	s, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		if n, err := l.legacyRows(ctx); err != nil {
			return nil, err
		} else if n > 0 {
			return nil, fmt.Errorf("%w: %d entries in %s (run 'ward ledger adopt' once)", ErrNotAdopted, n, LegacyTable)
		}
		if dbs := core(kr).Anchored(); len(dbs) > 0 {
			if fresh, err := l.fresh(ctx); err != nil {
				return nil, err
			} else if fresh {
				return nil, fmt.Errorf("%w: keyring %s serves other databases (%s); if this one is new to it, adopt it once (ward ledger adopt --another-database); if it is one of them, its ledger table was dropped: restore it from a backup", ErrNewDatabase, kr.ID(), strings.Join(dbs, ", "))
			}
			return nil, fmt.Errorf("%w, but keyring %s anchors databases %s: a database writer deleted its ledger, or the keyring has not served this database yet (then run 'ward ledger adopt')", ErrMissing, kr.ID(), strings.Join(dbs, ", "))
		}
		return nil, nil
	}
	st, err := authenticate(s, kr)
	if err != nil {
		return nil, err
	}
	if a, ok := core(kr).Anchor(st.Database); !ok {
		if err := unanchored(kr, st); err != nil {
			return nil, err
		}
	} else if st.Counter < a.Counter || st.Epoch < a.Epoch {
		return nil, fmt.Errorf("%w: counter %d, anchored at %d: an older copy of the ledger was put back", ErrReplayed, st.Counter, a.Counter)
	}
	var missing []keyring.KeyID
	for _, k := range st.Keys {
		if _, ok := kr.Lookup(k.ID); !ok && k.State != RetiredState {
			missing = append(missing, k.ID)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingKeysError{Keyring: kr.ID(), IDs: missing}
	}
	return st, nil
}

// unanchored decides on an authenticated ledger whose database the
// keyring file does not anchor. While the keyring anchors any database, it
// is refused: a ledger naming a database the keyring never anchored is
// one a database writer forged (with any keyring file ever written) or
// copied from another database, and accepting it would let the next
// write anchor the forged database and compare the real history with
// nothing. A database joins a keyring that anchors others only through
// Adopt, which finishes an adoption interrupted between the ledger's
// first write and its anchor. A keyring that anchors nothing accepts the
// first write of its first database (a first start that crashed before
// its anchor, or a service that cannot write the keyring file).
func unanchored(kr *keyring.Keyring, st *State) error {
	if dbs := core(kr).Anchored(); len(dbs) > 0 {
		return fmt.Errorf("%w: the ledger names database %s, which keyring %s does not anchor (it anchors %s): a ledger a database writer forged or copied from another database, or an adoption of this database that was interrupted (then run 'ward ledger adopt --another-database' again)",
			ErrAnchorMissing, st.Database, kr.ID(), strings.Join(dbs, ", "))
	}
	if st.Counter > 1 {
		return fmt.Errorf("%w: the ledger names database %s at counter %d: the keyring file was restored from before the database was first anchored, or is another copy", ErrAnchorMissing, st.Database, st.Counter)
	}
	return nil
}

// authenticate checks a stored ledger's MAC, its keyring and its
// generation against kr: everything but its anchor and its keys.
func authenticate(s *stored, kr *keyring.Keyring) (*State, error) {
	st := &s.state
	if st.Keyring != kr.ID() {
		return nil, fmt.Errorf("%w: the database's values are sealed under keyring %.40q, not %s", keyring.ErrWrongKeyring, st.Keyring, kr.ID())
	}
	mac, err := hex.DecodeString(s.mac)
	if err != nil || s.counter < 0 || uint64(s.counter) != st.Counter {
		return nil, ErrTampered
	}
	if err := verifyStateMAC(kr, st, stateMessage(s.body), mac); err != nil {
		if errors.Is(err, keycore.ErrUnknownEpoch) {
			return nil, fmt.Errorf("ledger: the database's ledger was written under a newer keyring file (generation %d or later): %w", st.Generation, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrTampered, err)
	}
	if kr.Generation() < st.Generation {
		return nil, &keyring.RollbackError{Generation: kr.Generation(), Seen: st.Generation}
	}
	return st, nil
}

// verifyStateMAC checks the ledger's MAC under its epoch. Epoch 0 (the
// root alone, which every copy of the keyring file derives) verifies in a
// keyring without state keys, and in one that gained them since only for
// a database it anchors at epoch 0: a keyring file from before state keys
// MACs and anchors its databases' ledgers under epoch 0, and its first key
// change (a rotation's added key) gives it its first state key while those
// ledgers are still there; each stays at epoch 0 until its next write (the
// rotation's own record of the key), which MACs it under the new key and
// anchors that epoch, after which epoch 0 is refused for it (an epoch
// older than the anchor's reads as put back). Without this such a file
// could not rotate: its databases' ledgers would read as forged.
func verifyStateMAC(kr *keyring.Keyring, st *State, msg, mac []byte) error {
	err := core(kr).VerifyStateMAC(st.Epoch, msg, mac)
	if err == nil || st.Epoch != 0 {
		return err
	}
	if a, ok := core(kr).Anchor(st.Database); ok && a.Epoch == 0 {
		return core(kr).VerifyRootStateMAC(msg, mac)
	}
	return err
}

// Record adds key IDs (default: the primary's) to the ledger with their
// current states, raises its generation to kr's, and anchors the result in
// the keyring file. Record a key before values are sealed under it: a
// service records the primary when it starts and a new key between adding
// it and promoting it. It first verifies the ledger like [Ledger.Check],
// and writes nothing when it already records what it would write. An
// error matching [ErrAnchorNotSaved] means the ledger was written but the
// keyring file could not be saved.
func (l *Ledger) Record(ctx context.Context, kr *keyring.Keyring, ids ...keyring.KeyID) error {
	if len(ids) == 0 {
		ids = []keyring.KeyID{kr.Primary().ID}
	}
	return l.update(ctx, kr, normal, func(st *State) {
		for _, id := range ids {
			if !slices.ContainsFunc(st.Keys, func(k Key) bool { return k.ID == id }) {
				st.Keys = append(st.Keys, Key{ID: id})
			}
		}
	})
}

// Mark records named facts that must survive deletion from the database
// (a migration ran, legacy forms are refused) in the ledger and in the
// keyring file's anchor. See [Ledger.Marked].
func (l *Ledger) Mark(ctx context.Context, kr *keyring.Keyring, marks ...string) error {
	return l.update(ctx, kr, normal, func(st *State) {
		for _, m := range marks {
			if !slices.Contains(st.Marks, m) {
				st.Marks = append(st.Marks, m)
			}
		}
	})
}

// Count adds delta to a named counter of the ledger (see
// [State.Counters]) and returns its new value. The ledger is
// anchored like every write, so a database writer cannot lower a counter
// without the ledger failing its checks.
func (l *Ledger) Count(ctx context.Context, kr *keyring.Keyring, name string, delta uint64) (uint64, error) {
	var n uint64
	err := l.update(ctx, kr, normal, func(st *State) {
		if st.Counters == nil {
			st.Counters = map[string]uint64{}
		}
		st.Counters[name] += delta
		n = st.Counters[name]
	})
	return n, err
}

// CountTx is Count within tx, the caller's transaction, so that what is
// counted (a forget's tombstone) and the count commit together or not at
// all: no crash leaves one without the other, and a retry that finds its
// work done counts nothing. Every read and write of the ledger goes
// through tx; the ledger's table must exist (a first [Ledger.Record]
// creates it). After tx commits, call anchor to save the new state in the
// keyring file: until then (or when it fails with [ErrAnchorNotSaved]) the
// anchor lags, which the next write catches up, as with a service that
// cannot write the keyring file.
func (l *Ledger) CountTx(ctx context.Context, tx *sql.Tx, kr *keyring.Keyring, name string, delta uint64) (anchor func(context.Context) error, err error) {
	in := l.inTx(tx)
	if _, err := in.Count(ctx, kr, name, delta); err != nil {
		return nil, err
	}
	return in.anchorAfter(kr), nil
}

// MarkTx is Mark within tx, the caller's transaction (as [Ledger.CountTx]):
// the marks commit with what they say, or not at all. Call anchor after
// the commit.
func (l *Ledger) MarkTx(ctx context.Context, tx *sql.Tx, kr *keyring.Keyring, marks ...string) (anchor func(context.Context) error, err error) {
	in := l.inTx(tx)
	if err := in.Mark(ctx, kr, marks...); err != nil {
		return nil, err
	}
	return in.anchorAfter(kr), nil
}

// Tally names what a counter counts ([State.Tallies]).
type Tally = keycore.Tally

// TallyTx is CountTx of one identity (a forgotten subject's keyed hash):
// it adds one to the named counter and id to its tally ([State.Tallies]),
// within tx, and returns the tally as it was before — what a forget
// journal's record chains from. A counter counted before tallies (or by
// Count) starts its tally at its count.
func (l *Ledger) TallyTx(ctx context.Context, tx *sql.Tx, kr *keyring.Keyring, name string, id []byte) (prev Tally, anchor func(context.Context) error, err error) {
	prevs, anchor, err := l.TallyEachTx(ctx, tx, kr, name, [][]byte{id})
	if err != nil {
		return Tally{}, nil, err
	}
	return prevs[0], anchor, nil
}

// TallyEachTx is TallyTx of several identities, in order, and [Ledger.Mark]
// of marks, in one write of the ledger within tx: prevs[i] is the tally
// ids[i] chains from. A job moving many records onto a tally at once (and
// marking the move done) rewrites the ledger once, not once per record.
func (l *Ledger) TallyEachTx(ctx context.Context, tx *sql.Tx, kr *keyring.Keyring, name string, ids [][]byte, marks ...string) (prevs []Tally, anchor func(context.Context) error, err error) {
	in := l.inTx(tx)
	err = in.update(ctx, kr, normal, func(st *State) {
		if st.Counters == nil {
			st.Counters = map[string]uint64{}
		}
		if st.Tallies == nil {
			st.Tallies = map[string]Tally{}
		}
		prevs = prevs[:0]
		for _, id := range ids {
			prev := st.Tally(name)
			prevs = append(prevs, prev)
			st.Counters[name]++
			st.Tallies[name] = prev.Add(id)
		}
		for _, m := range marks {
			if !slices.Contains(st.Marks, m) {
				st.Marks = append(st.Marks, m)
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return prevs, in.anchorAfter(kr), nil
}

// Tally is the named counter's tally: the recorded one, or one starting
// at the counter's count (a counter from before tallies). A tally counts
// forgets as they happened; the counter, which a recovery may set to the
// tombstones it left, can differ from it.
func (st *State) Tally(name string) Tally {
	if t, ok := st.Tallies[name]; ok {
		return t
	}
	n := st.Counters[name]
	return Tally{Count: n, Since: n}
}

// inTx is l working within tx, the caller's transaction.
func (l *Ledger) inTx(tx *sql.Tx) *Ledger {
	in := &Ledger{DB: l.DB, Dialect: l.Dialect, Table: l.Table, tx: tx}
	in.created.Store(true)
	in.primary.Inherit(&l.primary)
	return in
}

// anchorAfter returns what saves, after the caller's commit, the state in
// wrote to the keyring file's anchor.
func (in *Ledger) anchorAfter(kr *keyring.Keyring) func(context.Context) error {
	st := in.pending
	return func(ctx context.Context) error {
		if st == nil {
			return nil
		}
		return in.anchor(ctx, kr, st)
	}
}

// Retire records that a key was retired: its material is removed from the
// keyring on purpose, after a census found no value under it. A retired
// key no longer counts as missing from the keyring ([MissingKeysError]),
// and is never recorded again. ward keyring retire checks and calls it.
func (l *Ledger) Retire(ctx context.Context, kr *keyring.Keyring, id keyring.KeyID) error {
	return l.update(ctx, kr, normal, func(st *State) {
		i := slices.IndexFunc(st.Keys, func(k Key) bool { return k.ID == id })
		if i < 0 {
			st.Keys = append(st.Keys, Key{ID: id, State: RetiredState})
		} else {
			st.Keys[i].State = RetiredState
		}
	})
}

// RecordColumns records the ward columns values are (about to be) sealed
// into; a column recorded again with another key, binding or encoding
// replaces the earlier record. It writes nothing when the ledger already
// records them.
func (l *Ledger) RecordColumns(ctx context.Context, kr *keyring.Keyring, cols ...Column) error {
	for _, c := range cols {
		if _, err := field.QuoteIdent(c.Table); err != nil {
			return err
		}
		if c.Kind != "" && c.Kind != KindPasswordHash {
			return fmt.Errorf("ledger: %s.%s: unknown column kind %.20q", c.Table, c.Column, c.Kind)
		}
		if c.Subject != "" && (!slices.Contains(c.Bind, c.Subject) || c.Namespace == "") {
			return fmt.Errorf("ledger: %s.%s: the subject column must be bound and have a namespace", c.Table, c.Column)
		}
		for _, n := range append([]string{c.Column, c.Key}, c.Bind...) {
			if _, err := field.QuoteIdent(n); err != nil {
				return err
			}
		}
	}
	return l.update(ctx, kr, normal, func(st *State) {
		for _, c := range cols {
			i := slices.IndexFunc(st.Columns, func(o Column) bool { return o.Table == c.Table && o.Column == c.Column })
			if i < 0 {
				st.Columns = append(st.Columns, c)
			} else {
				st.Columns[i] = c
			}
		}
	})
}

// Marked reports whether the database carries a mark, in its verified
// ledger or in the keyring file's anchor for it: deleting the ledger or
// putting back an older one does not remove a mark.
func (l *Ledger) Marked(ctx context.Context, kr *keyring.Keyring, mark string) (bool, error) {
	st, err := l.Verified(ctx, kr)
	if err != nil || st == nil {
		return false, err
	}
	if slices.Contains(st.Marks, mark) {
		return true, nil
	}
	a, _ := core(kr).Anchor(st.Database)
	return a.HasMark(mark), nil
}

// AdoptOptions are the operator's answers for [Ledger.Adopt].
type AdoptOptions struct {
	// AnotherDatabase confirms that the database is not one the keyring
	// already anchors (whose ledger a database writer could have deleted):
	// required when the keyring anchors any database.
	AnotherDatabase bool
}

// Adopted reports what [Ledger.Adopt] took over.
type Adopted struct {
	// Database is the ID the database was given.
	Database string
	// Legacy is how many entries of the unauthenticated ledger were
	// trusted as they were.
	Legacy int
}

// Adopt gives a database its authenticated ledger, once, when an operator
// asks (ward ledger adopt): it takes over the unauthenticated ledger of an
// earlier release, trusting its entries as they are (after the checks
// earlier releases made: same keyring, no newer generation, no key the
// keyring lacks), or starts a ledger for a database the keyring has not
// served yet. It refuses a database that already has one
// ([ErrAlreadyAdopted]), and, unless opts.AnotherDatabase, any database
// while the keyring anchors others: a database whose ledger was deleted
// is refused by [Ledger.Check], not adopted.
func (l *Ledger) Adopt(ctx context.Context, kr *keyring.Keyring, opts AdoptOptions) (Adopted, error) {
	s, err := l.read(ctx)
	if err != nil {
		return Adopted{}, err
	}
	if s != nil {
		return l.finishAdoption(ctx, kr, s, opts)
	}
	if dbs := core(kr).Anchored(); len(dbs) > 0 && !opts.AnotherDatabase {
		return Adopted{}, fmt.Errorf("%w: keyring %s anchors databases %s; adopt this one only if it is not one of them (a database whose ledger was deleted must not be adopted again)", ErrMissing, kr.ID(), strings.Join(dbs, ", "))
	}
	legacy, err := l.legacyEntries(ctx)
	if err != nil {
		return Adopted{}, err
	}
	var seen uint64
	var missing, ids []keyring.KeyID
	for _, e := range legacy {
		if e.Keyring != kr.ID() {
			return Adopted{}, fmt.Errorf("%w: the database's values are sealed under keyring %.40q, not %s", keyring.ErrWrongKeyring, e.Keyring, kr.ID())
		}
		seen = max(seen, e.Generation)
		if _, ok := kr.Lookup(e.Key); !ok {
			missing = append(missing, e.Key)
		}
		ids = append(ids, e.Key)
	}
	if kr.Generation() < seen {
		return Adopted{}, &keyring.RollbackError{Generation: kr.Generation(), Seen: seen}
	}
	if len(missing) > 0 {
		return Adopted{}, &MissingKeysError{Keyring: kr.ID(), IDs: missing}
	}
	var db string
	err = l.update(ctx, kr, adopting, func(st *State) {
		for _, id := range append(ids, kr.Primary().ID) {
			if !slices.ContainsFunc(st.Keys, func(k Key) bool { return k.ID == id }) {
				st.Keys = append(st.Keys, Key{ID: id})
			}
		}
		db = st.Database
	})
	return Adopted{Database: db, Legacy: len(legacy)}, err
}

// finishAdoption is Adopt on a database that has a ledger: one whose first
// write an interrupted adoption left unanchored (authenticated, counter 1,
// a database the keyring does not anchor) is anchored now, if the
// operator confirms it is another database; any other is already adopted.
func (l *Ledger) finishAdoption(ctx context.Context, kr *keyring.Keyring, s *stored, opts AdoptOptions) (Adopted, error) {
	st, err := authenticate(s, kr)
	if err != nil {
		return Adopted{}, err
	}
	if _, anchored := core(kr).Anchor(st.Database); anchored || st.Counter != 1 || !opts.AnotherDatabase {
		return Adopted{}, fmt.Errorf("%w (database %s)", ErrAlreadyAdopted, st.Database)
	}
	if err := l.anchor(ctx, kr, st); err != nil {
		return Adopted{}, err
	}
	return Adopted{Database: st.Database}, nil
}

// maxAttempts bounds compare-and-swap retries against concurrent writers.
const maxAttempts = 8

// mode is how update reads the current state.
type mode int

const (
	normal     mode = iota // verified against the anchor (Verified)
	adopting               // none may exist yet (Adopt)
	recovering             // authenticated, but behind its anchor (Recover)
)

// current reads the state update starts from.
func (l *Ledger) current(ctx context.Context, kr *keyring.Keyring, m mode) (*State, error) {
	switch m {
	case adopting:
		if s, err := l.read(ctx); err != nil {
			return nil, err
		} else if s != nil {
			return nil, ErrAlreadyAdopted
		}
		return nil, nil
	case recovering:
		s, err := l.read(ctx)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, fmt.Errorf("%w: nothing to recover from (restore the ledger table from a backup first)", ErrMissing)
		}
		return authenticate(s, kr)
	}
	return l.Verified(ctx, kr)
}

// successor is the copy of cur (nil: a new ledger) that update changes.
func successor(cur *State, kr *keyring.Keyring) State {
	if cur == nil {
		return State{Database: newDatabaseID(), Keyring: kr.ID()}
	}
	next := *cur
	next.Keys = slices.Clone(cur.Keys)
	next.Marks = slices.Clone(cur.Marks)
	next.Columns = slices.Clone(cur.Columns)
	next.Counters = maps.Clone(cur.Counters)
	next.Tallies = maps.Clone(cur.Tallies)
	next.Recheck = slices.Clone(cur.Recheck)
	next.Recoveries = slices.Clone(cur.Recoveries)
	next.Forms = cloneForms(cur.Forms)
	next.Grants = cloneGrants(cur.Grants)
	next.MACs = cloneMACs(cur.MACs)
	next.Indexes = cloneIndexes(cur.Indexes)
	next.extra = maps.Clone(cur.extra)
	return next
}

// normalise refreshes key states from kr (a retired key stays retired,
// whatever a keyring says) and sorts what is kept sorted.
func normalise(next *State, kr *keyring.Keyring) {
	for i, k := range next.Keys {
		if k.State == RetiredState {
			continue
		}
		if info, ok := kr.Lookup(k.ID); ok {
			next.Keys[i].State = info.State.String()
		}
	}
	slices.SortFunc(next.Keys, func(a, b Key) int { return cmp.Compare(a.ID, b.ID) })
	slices.Sort(next.Marks)
	slices.Sort(next.Recheck)
	next.Recheck = slices.Compact(next.Recheck)
	next.Forms = sortForms(next.Forms)
	next.Grants = cloneGrants(next.Grants)
	next.MACs = sortMACs(next.MACs)
	next.Indexes = sortIndexes(next.Indexes)
	slices.SortFunc(next.Columns, func(a, b Column) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Column, b.Column))
	})
}

// unchanged reports whether next records what cur does, under kr's
// newest state key.
func unchanged(cur, next *State, kr *keyring.Keyring) bool {
	return slices.Equal(cur.Keys, next.Keys) && slices.Equal(cur.Marks, next.Marks) &&
		slices.EqualFunc(cur.Columns, next.Columns, Column.equal) && maps.Equal(cur.Counters, next.Counters) &&
		maps.EqualFunc(cur.Tallies, next.Tallies, Tally.Equal) && slices.Equal(cur.Recheck, next.Recheck) && len(cur.Recoveries) == len(next.Recoveries) &&
		slices.EqualFunc(cur.Forms, next.Forms, Form.equal) && cur.Expect == next.Expect &&
		slices.EqualFunc(cur.Grants, next.Grants, Grant.equal) && slices.EqualFunc(cur.MACs, next.MACs, MACColumn.equal) &&
		slices.EqualFunc(cur.Indexes, next.Indexes, IndexColumn.equal) && cur.Epoch == core(kr).StateEpoch()
}

// update reads the ledger (as m says), applies change to a copy,
// refreshes key states and the generation, and writes it by
// compare-and-swap if it changed, then anchors it. A recovery writes a
// counter above both the database's and the anchor's.
func (l *Ledger) update(ctx context.Context, kr *keyring.Keyring, m mode, change func(*State)) error {
	t, err := l.create(ctx)
	if err != nil {
		return err
	}
	for range maxAttempts {
		cur, err := l.current(ctx, kr, m)
		if err != nil {
			return err
		}
		next := successor(cur, kr)
		change(&next)
		normalise(&next, kr)
		if cur != nil && m != recovering && unchanged(cur, &next, kr) {
			return l.anchorNow(ctx, kr, cur) // unchanged: let the anchor catch up
		}
		next.Counter++
		if a, ok := core(kr).Anchor(next.Database); ok && m == recovering {
			next.Counter = max(next.Counter, a.Counter+1)
		}
		next.Epoch = core(kr).StateEpoch()
		next.Generation = max(next.Generation, kr.Generation())
		body, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("ledger: encoding the ledger: %w", err)
		}
		epoch, mac := core(kr).StateMAC(stateMessage(string(body)))
		if epoch != next.Epoch {
			continue // the keyring changed under us
		}
		won, err := l.write(ctx, t, cur, &next, string(body), hex.EncodeToString(mac))
		if err != nil {
			return err
		}
		if !won {
			if m == adopting {
				return ErrAlreadyAdopted
			}
			continue // another writer won: read again and merge
		}
		return l.anchorNow(ctx, kr, &next)
	}
	return errors.New("ledger: the ledger kept changing under concurrent writers")
}

// write stores next by compare-and-swap on cur's counter (an insert when
// cur is nil) in a durable transaction ([sqltable.Durable]: with a
// synchronous standby, the commit waits until it has applied the state),
// and reports whether it won.
func (l *Ledger) write(ctx context.Context, t string, cur, next *State, body, mac string) (bool, error) {
	tx := l.tx
	if tx == nil {
		var err error
		if tx, err = l.DB.BeginTx(ctx, nil); err != nil {
			return false, fmt.Errorf("ledger: writing the ledger: %w", err)
		}
		defer tx.Rollback()
	}
	if err := sqltable.Durable(ctx, tx, l.Dialect.String()); err != nil {
		return false, fmt.Errorf("ledger: %w", err)
	}
	var err error
	p := l.Dialect.Placeholder
	var res sql.Result
	if cur == nil {
		conflict := " ON CONFLICT (id) DO NOTHING"
		if l.Dialect == field.MySQL {
			conflict = "" // a duplicate is an error there, below
		}
		res, err = tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (id, counter, body, mac) VALUES (1, %s, %s, %s)%s`, t, p(1), p(2), p(3), conflict),
			int64(next.Counter), body, mac)
	} else {
		res, err = tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET counter = %s, body = %s, mac = %s WHERE id = 1 AND counter = %s`, t, p(1), p(2), p(3), p(4)),
			int64(next.Counter), body, mac, int64(cur.Counter))
	}
	if sqltable.Conflict(err) && l.tx != nil {
		// MySQL rolled the caller's whole transaction back (a deadlock, or
		// on Galera a brute-force abort): its later statements would run
		// outside any transaction and its COMMIT would succeed with
		// nothing in it. The caller runs it again.
		return false, fmt.Errorf("ledger: writing the ledger: the transaction was rolled back: %w", err)
	}
	if sqltable.Duplicate(err) || sqltable.Conflict(err) {
		return false, nil // another writer's insert, or a lost certification (Galera)
	}
	if err != nil {
		return false, fmt.Errorf("ledger: writing the ledger: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("ledger: writing the ledger: %w", err)
	}
	if n == 0 {
		return false, nil
	}
	if l.tx != nil {
		return true, nil // the caller commits
	}
	if err := sqltable.Commit(ctx, tx); sqltable.Conflict(err) {
		return false, nil // certified against a concurrent writer on another node
	} else if err != nil {
		return false, fmt.Errorf("ledger: writing the ledger: %w", err)
	}
	return true, nil
}

// anchorNow anchors st, or in a caller's transaction keeps it for after
// the commit (CountTx).
func (l *Ledger) anchorNow(ctx context.Context, kr *keyring.Keyring, st *State) error {
	if l.tx != nil {
		l.pending = st
		return nil
	}
	return l.anchor(ctx, kr, st)
}

// anchor records st in the keyring file.
func (l *Ledger) anchor(ctx context.Context, kr *keyring.Keyring, st *State) error {
	if a, ok := core(kr).Anchor(st.Database); ok && a.Counter >= st.Counter && a.Epoch >= st.Epoch && anchorHas(a, st) {
		return nil
	}
	cols := make([]string, len(st.Columns))
	for i, c := range st.Columns {
		cols[i] = c.Table + "." + c.Column
	}
	err := core(kr).SetAnchor(ctx, st.Database, Anchor{Counter: st.Counter, Epoch: st.Epoch, Marks: st.Marks, Counters: st.Counters, Tallies: st.Tallies, Columns: cols})
	if errors.Is(err, keycore.ErrAnchorRollback) {
		return nil // another process anchored a newer state first
	}
	if err != nil {
		return fmt.Errorf("%w (database %s, counter %d): %w", ErrAnchorNotSaved, st.Database, st.Counter, err)
	}
	return nil
}

func newDatabaseID() string {
	var b [8]byte
	rand.Read(b[:])
	return "db-" + hex.EncodeToString(b[:])
}

// Keyrings lists the keyring IDs the database's ledger names (or, before
// it is adopted, its unauthenticated ledger names), unverified: empty for
// a database no keyring has written to yet.
func (l *Ledger) Keyrings(ctx context.Context) ([]string, error) {
	s, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	if s != nil {
		return []string{s.state.Keyring}, nil
	}
	es, err := l.legacyEntries(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if !slices.Contains(out, e.Keyring) {
			out = append(out, e.Keyring)
		}
	}
	slices.Sort(out)
	return out, nil
}

// legacyEntry is one row of the unauthenticated ledger.
type legacyEntry struct {
	Keyring    string
	Key        keyring.KeyID
	Generation uint64
}

// maxLegacyEntries bounds what Adopt reads from the unauthenticated
// ledger, which a database writer controls.
const maxLegacyEntries = 10000

// fresh reports whether the ledger's table does not exist.
func (l *Ledger) fresh(ctx context.Context) (bool, error) {
	t, err := l.table()
	if err != nil {
		return false, err
	}
	_, err = l.DB.ExecContext(ctx, `SELECT 1 FROM `+t+` WHERE 1 = 0`)
	if sqltable.Missing(err) {
		return true, nil
	}
	return false, err
}

func (l *Ledger) legacyExists(ctx context.Context) (bool, error) {
	var n int
	if err := l.DB.QueryRowContext(ctx, sqltable.TableExists(l.Dialect.String()), LegacyTable).Scan(&n); err != nil {
		return false, fmt.Errorf("ledger: looking for the unauthenticated ledger: %w", err)
	}
	return n > 0, nil
}

func (l *Ledger) legacyRows(ctx context.Context) (int, error) {
	if ok, err := l.legacyExists(ctx); err != nil || !ok {
		return 0, err
	}
	var n int
	if err := l.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+LegacyTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("ledger: reading the unauthenticated ledger: %w", err)
	}
	return n, nil
}

func (l *Ledger) legacyEntries(ctx context.Context) ([]legacyEntry, error) {
	if ok, err := l.legacyExists(ctx); err != nil || !ok {
		return nil, err
	}
	// Its text within bounds: IDs are a few dozen bytes, and a longer
	// value reads as empty and fails to parse.
	kid, key := sqltable.Bound{Col: "keyring_id", Max: 256}, sqltable.Bound{Col: "key_id", Max: 256}
	rows, err := l.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s, %s, generation FROM %s ORDER BY keyring_id, key_id LIMIT %d`, kid.Value(), key.Value(), LegacyTable, maxLegacyEntries+1))
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the unauthenticated ledger: %w", err)
	}
	defer rows.Close()
	var out []legacyEntry
	for rows.Next() {
		var e legacyEntry
		var key string
		var gen int64
		if err := rows.Scan(&e.Keyring, &key, &gen); err != nil {
			return nil, fmt.Errorf("ledger: reading the unauthenticated ledger: %w", err)
		}
		if e.Key, err = keyring.ParseKeyID(key); err != nil {
			return nil, fmt.Errorf("ledger: unauthenticated ledger: %w", err)
		}
		e.Generation = uint64(max(gen, 0))
		out = append(out, e)
	}
	if len(out) > maxLegacyEntries {
		return nil, fmt.Errorf("ledger: the unauthenticated ledger has more than %d entries", maxLegacyEntries)
	}
	return out, rows.Err()
}
