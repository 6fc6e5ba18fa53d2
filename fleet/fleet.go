// Package fleet records, in the database a keyring protects, which
// processes use the keyring and which keys each has loaded, so that a
// rotation can wait until every running process can open values under a
// new key before any process seals under it.
//
// Every process of an application joins the registry when it starts
// ([Registry.Join]) and heartbeats the keyring generation and key IDs it
// holds every few seconds (its keyring re-reads the shared keyring file on
// its own: [keyring.Keyring.Watch]); it leaves on a clean exit. An
// operator's rotation (ward keyring rotate --db) adds the new key
// decrypt-only, waits with [Registry.Await] until every registered process
// holds it, promotes it, waits again, and re-encrypts.
//
// Rows are MAC'd under a key derived from the keyring: a database writer
// cannot make a process look ready, and a registration that disappears
// without its process leaving blocks the wait instead of letting it go
// early. A row whose heartbeat is older than WaitOptions.StaleAfter (a
// frozen or killed process) stops blocking, and the wait says so: such a
// process, if it resumes, still opens values under the new key, because a
// keyring that meets an unknown key ID re-reads its file once first.
package fleet

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// DefaultTable is the registry's table when none is named.
const DefaultTable = "ward_fleet"

// DefaultHeartbeat is how often a member reports what it holds.
const DefaultHeartbeat = 2 * time.Second

// maxRows bounds what a wait reads from the registry, which a database
// writer can fill.
const maxRows = 10000

// Bounds on one row's text, in bytes: far above what Join writes (a host
// name, a random ID, a keyring ID and nine bytes per key held), so that a
// longer value is a writer's. It is read as empty and its row is Tampered.
const (
	maxText     = 1024
	maxKeysText = 1 << 20
	macText     = 128 // "v2:", an epoch, ":" and a MAC in hex
)

// listColumns reads a row with every text column within its bound: the
// database neither loads nor hands over a longer value.
func (r *Registry) listColumns() string {
	id, host, kr := sqltable.Bound{Col: "id", Max: maxText}, sqltable.Bound{Col: "host", Max: maxText}, sqltable.Bound{Col: "keyring", Max: maxText}
	keys, tag := sqltable.Bound{Col: r.keysCol(), Max: maxKeysText}, sqltable.Bound{Col: "mac", Max: macText}
	caps := sqltable.Bound{Col: "caps", Max: maxKeysText}
	return fmt.Sprintf("%s, %s, pid, %s, generation, %s, started, seen, exited, %s, %s, %s",
		id.Value(), host.Value(), kr.Value(), keys.Value(), tag.Value(), caps.Value(), sqltable.TooLong(id, host, kr, keys, tag, caps))
}

// keysCol is the keys column, quoted: KEYS is a reserved word of MySQL.
func (r *Registry) keysCol() string {
	k, _ := r.Dialect.Quote("keys")
	return k
}

// maxListBytes bounds the text one read of the registry holds in memory
// (a variable so that a test can lower it).
var maxListBytes = 64 << 20

// Registry is the table of a database's processes.
type Registry struct {
	// DB is the database.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect field.Dialect
	// Table is the registry table (default DefaultTable), created if
	// missing.
	Table string
	// Gate, if set, is this process's forms gate (package fleetgate): Join
	// registers the forms it reads, refuses to join when the database
	// depends on a form it lacks, and every heartbeat advances the forms
	// it wants to write (see [Member]).
	Gate *fleetgate.Gate
	// Ledger is the ledger that records forms (default: the default
	// ledger table of DB).
	Ledger *ledger.Ledger
	// OnUsage, if set, receives after each heartbeat the seals per key
	// the fleet has reported to the database ([Usage]): a process warns
	// of a key [KeyUsage.Due] with it, or exports the counts.
	OnUsage func([]KeyUsage)

	created  atomic.Bool
	migrated atomic.Bool          // the caps column exists
	primary  sqltable.PrimaryOnce // the table exists: heartbeats and waits skip the DDL
}

// Process is one registered process, as its latest heartbeat says.
type Process struct {
	ID         string          `json:"id"`
	Host       string          `json:"host"`
	PID        int             `json:"pid"`
	Keyring    string          `json:"keyring"`
	Generation uint64          `json:"generation"`
	Keys       []keyring.KeyID `json:"keys"`
	Started    time.Time       `json:"started"`
	Seen       time.Time       `json:"seen"`
	Exited     bool            `json:"exited"`
	// Forms are the forms (package fleetgate) the process reads; none for a
	// process of a release from before forms.
	Forms []fleetgate.Form `json:"forms,omitempty"`
	// Tampered is set for a row that fails its MAC: what it says is not
	// what a process wrote.
	Tampered bool `json:"tampered,omitempty"`
}

// Can reports whether the process reads form f.
func (p Process) Can(f fleetgate.Form) bool { return slices.Contains(p.Forms, f) }

// Has reports whether the process holds key id.
func (p Process) Has(id keyring.KeyID) bool { return slices.Contains(p.Keys, id) }

// String names the process for an operator. Its ID and host are a
// database writer's text as much as the process's, so control characters
// are escaped: a row cannot clear the operator's terminal or print a fake
// line.
func (p Process) String() string {
	return fmt.Sprintf("%s (%s pid %d)", printable.String(p.ID), printable.String(p.Host), p.PID)
}

// name is the registry's table, quoted.
func (r *Registry) name() (string, error) {
	return tableName("Registry", r.DB, r.Dialect, r.Table, DefaultTable)
}

// tableName is the quoted name of one of the package's tables (def
// unless name is given), once what (Registry, Usage) has DB and Dialect.
func tableName(what string, db *sql.DB, d field.Dialect, name, def string) (string, error) {
	if db == nil || (d != field.SQLite && d != field.Postgres && d != field.MySQL) {
		return "", fmt.Errorf("fleet: %s needs DB and Dialect", what)
	}
	if name == "" {
		name = def
	}
	return d.Quote(name)
}

// table returns the registry's table, created if missing (writers only:
// a List creates nothing).
func (r *Registry) table(ctx context.Context) (string, error) {
	t, err := r.name()
	if err != nil || r.created.Load() {
		return t, err
	}
	if err := r.onPrimary(ctx); err != nil {
		return "", err
	}
	e := r.Dialect.String()
	capsDefault := " DEFAULT ''" // for rows of an older release; MySQL 8 allows no literal default on a TEXT
	if r.Dialect == field.MySQL {
		capsDefault = ""
	}
	if err := sqltable.Create(ctx, r.DB, t, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		id %s PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, keyring TEXT NOT NULL,
		generation BIGINT NOT NULL, %s %s NOT NULL, started BIGINT NOT NULL, seen BIGINT NOT NULL,
		exited INTEGER NOT NULL, mac TEXT NOT NULL, caps %s NOT NULL%s)`,
		t, sqltable.KeyText(e, maxText), r.keysCol(), sqltable.LongText(e), sqltable.LongText(e), capsDefault)); err != nil {
		return "", fmt.Errorf("fleet: creating the registry: %w", err)
	}
	if err := r.migrate(ctx, t); err != nil {
		return "", err
	}
	r.created.Store(true)
	return t, nil
}

// onPrimary returns an error matching sqltable.ErrStandby (and
// ledger.ErrStandby) when r.DB reaches a PostgreSQL standby, asked once
// per Registry: a lagging registry would name processes that left and miss
// those that joined.
func (r *Registry) onPrimary(ctx context.Context) error {
	if err := r.primary.Check(ctx, r.DB, r.Dialect.String()); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	return nil
}

// prepare creates the table if missing and reads what its row MACs need.
func (r *Registry) prepare(ctx context.Context, kr *keyring.Keyring) (string, *rowMACs, error) {
	t, err := r.table(ctx)
	if err != nil {
		return "", nil, err
	}
	m, err := r.macs(ctx, kr)
	return t, m, err
}

func keysText(ids []keyring.KeyID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ",")
}

func parseKeys(s string) ([]keyring.KeyID, error) {
	if s == "" {
		return nil, nil
	}
	var out []keyring.KeyID
	for _, f := range strings.Split(s, ",") {
		id, err := keyring.ParseKeyID(f)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// Member is this process's registration. Leave it on a clean exit.
type Member struct {
	r      *Registry
	kr     *keyring.Keyring
	key    *rowMACs
	p      Process
	mu     sync.Mutex
	stop   context.CancelFunc
	done   chan struct{}
	errors func(error)
	marked time.Time // when the gate last learned the ledger's marks
	// rejoined is set by a heartbeat that found the registration gone
	// and registered again: its forms are joined again at once.
	rejoined bool
	leaving  atomic.Bool // Leave was called: never register again
	usage    *Usage      // where the process's seals are added up
}

// Join registers this process (host name, pid) with what kr holds, and
// reports again every heartbeat (0: DefaultHeartbeat) until Leave.
// onError, if not nil, receives heartbeat failures (the database is
// down); the heartbeat keeps trying.
func (r *Registry) Join(ctx context.Context, kr *keyring.Keyring, heartbeat time.Duration, onError func(error)) (*Member, error) {
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	t, key, err := r.prepare(ctx, kr)
	if err != nil {
		return nil, err
	}
	// Rows of processes gone for a day are pruned by each process that
	// joins (List, a look, writes nothing).
	r.DB.ExecContext(ctx, r.Dialect.Rebind(fmt.Sprintf(`DELETE FROM %s WHERE seen < ?`, t)), time.Now().Add(-24*time.Hour).UnixMilli())
	host, _ := os.Hostname()
	var b [8]byte
	rand.Read(b[:])
	now := time.Now().Truncate(time.Millisecond)
	m := &Member{r: r, kr: kr, key: key, errors: onError, done: make(chan struct{}), usage: &Usage{DB: r.DB, Dialect: r.Dialect},
		p: Process{ID: "p-" + hex.EncodeToString(b[:]), Host: host, PID: os.Getpid(), Keyring: kr.ID(), Started: now, Seen: now}}
	m.fill()
	if err := m.insert(ctx, t); err != nil {
		return nil, fmt.Errorf("fleet: registering: %w", err)
	}
	if err := m.joinForms(ctx); err != nil {
		m.write(context.WithoutCancel(ctx), true) // leave at once: it never served
		return nil, err
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.stop = cancel
	go m.loop(hctx, heartbeat)
	return m, nil
}

// insert writes the member's row into the registry table t.
func (m *Member) insert(ctx context.Context, t string) error {
	p, r := m.p, m.r
	_, err := r.DB.ExecContext(ctx, r.Dialect.Rebind(fmt.Sprintf(`INSERT INTO %s (id, host, pid, keyring, generation, %s, started, seen, exited, mac, caps)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`, t, r.keysCol())), p.ID, p.Host, p.PID, p.Keyring, int64(p.Generation), keysText(p.Keys),
		p.Started.UnixMilli(), p.Seen.UnixMilli(), m.key.tag(&p, r.Gate), formsText(p.Forms))
	return err
}

// fill copies what the keyring holds into m.p.
func (m *Member) fill() {
	m.p.Forms = m.r.Gate.Declared()
	m.p.Generation = m.kr.Generation()
	m.p.Keys = m.p.Keys[:0]
	for _, k := range m.kr.Keys() {
		if k.State != keyring.Disabled {
			m.p.Keys = append(m.p.Keys, k.ID)
		}
	}
}

func (m *Member) loop(ctx context.Context, every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.Beat(ctx); err != nil && ctx.Err() == nil && m.errors != nil {
			m.errors(err)
		}
	}
}

// ID returns the member's process ID in the registry.
func (m *Member) ID() string { return m.p.ID }

// Beat reports now what the keyring holds and the forms the process reads,
// then advances the forms its gate wants and adds the process's seals to
// the key-usage table ([Usage]; the heartbeat does all of it on its own;
// call Beat after a reload to be counted at once).
func (m *Member) Beat(ctx context.Context) error {
	if err := m.write(ctx, false); err != nil {
		return err
	}
	m.mu.Lock()
	rejoined := m.rejoined
	m.rejoined = false
	m.mu.Unlock()
	if rejoined {
		if err := m.joinForms(ctx); err != nil {
			return fmt.Errorf("fleet: registered again after the registration vanished: %w", err)
		}
	}
	// The usage report is advisory: its failure (a Galera certification
	// lost to another node's report) never holds the forms back.
	err := m.advance(ctx)
	return errors.Join(err, m.reportUsage(ctx))
}

func (m *Member) write(ctx context.Context, exited bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.r.table(ctx)
	if err != nil {
		return err
	}
	m.fill()
	m.p.Seen = time.Now().Truncate(time.Millisecond)
	m.p.Exited = exited
	p := m.p
	// A heartbeat never revives a registration that left: one cancelled
	// by Leave may still reach the server after Leave's own write.
	res, err := m.r.DB.ExecContext(ctx, m.r.Dialect.Rebind(fmt.Sprintf(`UPDATE %s SET generation = ?, %s = ?, seen = ?, exited = ?, mac = ?, caps = ? WHERE id = ? AND exited = 0`, t, m.r.keysCol())),
		int64(p.Generation), keysText(p.Keys), p.Seen.UnixMilli(), boolInt(exited), m.key.tag(&p, m.r.Gate), formsText(p.Forms), p.ID)
	if err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 && !exited && !m.leaving.Load() {
		return m.reregister(ctx, t)
	}
	return nil
}

// reregister writes the member's row again after a heartbeat updated
// none: a database writer deleted it (to let a form open, or a rotation
// promote, while this process still runs), or the database went back to
// before the process joined. A row that is there after all (MySQL counts
// the rows an UPDATE changed, and one left by Leave is never revived) is a
// duplicate, and nothing is written.
func (m *Member) reregister(ctx context.Context, t string) error {
	if err := m.insert(ctx, t); err != nil {
		if field.Duplicate(err) {
			return nil
		}
		return fmt.Errorf("fleet: registering again (the registration vanished): %w", err)
	}
	m.rejoined = true
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Leave stops the heartbeat and marks the registration as exited (a clean
// exit: it no longer blocks a rotation).
func (m *Member) Leave(ctx context.Context) error {
	m.leaving.Store(true)
	m.stop()
	<-m.done
	return errors.Join(m.write(ctx, true), m.reportUsage(ctx))
}

// List returns every registered process, verifying each row's MAC
// (Tampered marks the rows that fail it). It also deletes rows that
// exited, or were last seen, more than a day ago.
func (r *Registry) List(ctx context.Context, kr *keyring.Keyring) ([]Process, error) {
	t, err := r.name()
	if err != nil {
		return nil, err
	}
	if err := r.onPrimary(ctx); err != nil {
		return nil, err
	}
	if err := r.migrate(ctx, t); err != nil {
		return nil, err
	}
	key, err := r.macs(ctx, kr)
	if err != nil {
		return nil, err
	}
	rows, err := r.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM %s ORDER BY started, id LIMIT %d`, r.listColumns(), t, maxRows+1))
	if sqltable.Missing(err) {
		return nil, nil // no process ever joined: nothing to list, and nothing is created
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the registry: %w", err)
	}
	defer rows.Close()
	var out []Process
	total := 0
	for rows.Next() {
		var p Process
		var pid, gen, started, seen int64
		var exited int
		var keys, tag, caps string
		var tooLong bool
		if err := rows.Scan(&p.ID, &p.Host, &pid, &p.Keyring, &gen, &keys, &started, &seen, &exited, &tag, &caps, &tooLong); err != nil {
			return nil, fmt.Errorf("fleet: reading the registry: %w", err)
		}
		if total += len(p.ID) + len(p.Host) + len(p.Keyring) + len(keys) + len(tag) + len(caps); total > maxListBytes {
			return nil, fmt.Errorf("fleet: the registry's rows hold more text than one read takes (%d bytes)", maxListBytes)
		}
		p.PID, p.Generation, p.Exited = int(pid), uint64(max(gen, 0)), exited != 0
		p.Started, p.Seen = time.UnixMilli(started), time.UnixMilli(seen)
		ks, kerr := parseKeys(keys)
		p.Keys = ks
		fs, ferr := parseForms(caps)
		p.Forms = fs
		kerr = errors.Join(kerr, ferr)
		p.Tampered = tooLong || kerr != nil || !key.verify(&p, tag)
		out = append(out, p)
	}
	if len(out) > maxRows {
		return nil, fmt.Errorf("fleet: the registry holds more than %d rows", maxRows)
	}
	return out, rows.Err()
}

// WaitOptions tune [Registry.Await].
type WaitOptions struct {
	// StaleAfter is how old a heartbeat may be before its process stops
	// blocking the wait (default 2 minutes): a frozen or killed process.
	StaleAfter time.Duration
	// Skip names processes (by ID, or "host:pid") the operator lets the
	// wait go without.
	Skip []string
	// Poll is how often the registry is read (default 1 s).
	Poll time.Duration
	// Progress, if not nil, is called after each read with the processes
	// still waited for.
	Progress func(waiting []Process)
}

// Awaited reports how a wait ended.
type Awaited struct {
	// Ready are the processes that reached the condition.
	Ready []Process
	// Stale are the processes whose heartbeat stopped before they did:
	// they no longer blocked the wait.
	Stale []Process
	// Skipped are the processes the operator skipped.
	Skipped []Process
	// Exited are the processes that left cleanly during the wait.
	Exited []Process
}

// NotReadyError names the processes a wait ended without (its context
// expired).
type NotReadyError struct {
	Waiting []Process
	// Vanished are registrations that disappeared without their process
	// leaving (deleted by someone with database access): they block
	// until skipped, never let the wait go early.
	Vanished []Process
	Err      error
}

func (e *NotReadyError) Error() string {
	var parts []string
	for _, p := range e.Waiting {
		what := fmt.Sprintf("%v: generation %d, last seen %v ago", p, p.Generation, time.Since(p.Seen).Round(time.Second))
		if p.Tampered {
			what = fmt.Sprintf("%v: its registry row fails its MAC", p)
		}
		parts = append(parts, what)
	}
	for _, p := range e.Vanished {
		parts = append(parts, fmt.Sprintf("%v: its registration disappeared without the process leaving", p))
	}
	return fmt.Sprintf("fleet: still waiting for %s (%v)", strings.Join(parts, "; "), e.Err)
}

// Unwrap returns why the wait ended.
func (e *NotReadyError) Unwrap() error { return e.Err }

// Await waits until every process registered under kr's keyring — those
// registered when it starts and those that join during it — satisfies
// ready, has exited, or is stale or skipped; it returns a
// [*NotReadyError] naming the others when ctx ends. A registration that
// vanishes without leaving, or fails its MAC, keeps blocking.
func (r *Registry) Await(ctx context.Context, kr *keyring.Keyring, ready func(Process) bool, opts WaitOptions) (Awaited, error) {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 2 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	w := &wait{keyring: kr.ID(), ready: ready, opts: opts, known: map[string]Process{}, done: map[string]bool{}}
	var lastWaiting, lastVanished []Process
	for {
		ps, err := r.List(ctx, kr)
		if err != nil {
			if ctx.Err() != nil { // the wait ended during a read: say who was still awaited
				return w.res, &NotReadyError{Waiting: lastWaiting, Vanished: lastVanished, Err: ctx.Err()}
			}
			return w.res, err
		}
		waiting, vanished := w.round(ps)
		if opts.Progress != nil {
			opts.Progress(append(slices.Clone(waiting), vanished...))
		}
		if len(waiting) == 0 && len(vanished) == 0 {
			return w.res, nil
		}
		lastWaiting, lastVanished = waiting, vanished
		select {
		case <-ctx.Done():
			return w.res, &NotReadyError{Waiting: waiting, Vanished: vanished, Err: ctx.Err()}
		case <-time.After(opts.Poll):
		}
	}
}

// wait is the state of one Await across its reads of the registry.
type wait struct {
	keyring string
	ready   func(Process) bool
	opts    WaitOptions
	res     Awaited
	known   map[string]Process // every live registration seen so far
	done    map[string]bool
}

func (w *wait) skip(p Process) bool {
	return slices.Contains(w.opts.Skip, p.ID) || slices.Contains(w.opts.Skip, p.Host+":"+strconv.Itoa(p.PID))
}

// round takes one read of the registry: it settles every process that is
// ready, exited, stale or skipped, and returns those still waited for and
// the known registrations that vanished without leaving.
func (w *wait) round(ps []Process) (waiting, vanished []Process) {
	present := map[string]bool{}
	for _, p := range ps {
		if p.Keyring != w.keyring {
			continue // another keyring's process (a known one counts as vanished)
		}
		present[p.ID] = true
		if !w.done[p.ID] && !w.settle(p) {
			waiting = append(waiting, p)
		}
	}
	for id, p := range w.known {
		if !present[id] && !w.done[id] {
			if w.skip(p) {
				w.res.Skipped = append(w.res.Skipped, p)
				w.done[id] = true
				continue
			}
			vanished = append(vanished, p)
		}
	}
	return waiting, vanished
}

// settle records p's outcome if it has one, and reports whether it did.
func (w *wait) settle(p Process) bool {
	switch {
	case p.Tampered:
		w.known[p.ID] = p
		return false
	case p.Exited:
		if _, ok := w.known[p.ID]; ok {
			w.res.Exited = append(w.res.Exited, p)
		}
		w.done[p.ID] = true
		return true
	}
	w.known[p.ID] = p
	switch {
	case w.skip(p):
		w.res.Skipped = append(w.res.Skipped, p)
	case w.ready(p):
		w.res.Ready = append(w.res.Ready, p)
	case time.Since(p.Seen) > w.opts.StaleAfter:
		w.res.Stale = append(w.res.Stale, p)
	default:
		return false
	}
	w.done[p.ID] = true
	return true
}
