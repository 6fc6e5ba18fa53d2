package subject

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Grants of per-subject columns (keyring.GrantScope.Namespace): beside each
// keyring-wrapped key the store keeps, in the key row's scoped column,
// that key's K_scope of every per-subject column an unrevoked grant opens,
// each sealed under the keyring's key for keyring.SubjectGrantScope. A
// grant holds that key, not a subject's, and unwraps from the row on every
// use (GrantKeys): forgetting the subject deletes the row and what the
// grant could read of it; a private user's rows hold none (MakePrivate
// clears them), so a grant never opens a private user's values.

// scopedCol bounds the stored wraps: some 100 bytes per granted column.
var scopedCol = sqltable.Bound{Col: "scoped", Max: 64 << 10}

// grantedColumn is a per-subject column of the store's namespace that an
// unrevoked grant opens.
type grantedColumn struct{ table, column string }

func (g grantedColumn) name() string { return g.table + "." + g.column }

// grantedCache caches the granted columns read from the ledger.
type grantedCache struct {
	mu      sync.Mutex
	cols    []grantedColumn
	ever    bool // a grant, revoked or not, named a column of the namespace
	expires time.Time
}

// addScopedColumn adds the scoped column to a keys table of an earlier
// release.
func (s *Store) addScopedColumn(ctx context.Context) error {
	probe := fmt.Sprintf(`SELECT scoped FROM %s WHERE 1 = 0`, s.keys)
	if _, err := s.cfg.DB.ExecContext(ctx, probe); err == nil {
		return nil
	}
	_, aerr := s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN scoped %s`, s.keys, sqltable.Blob(s.cfg.Dialect.String())))
	if _, err := s.cfg.DB.ExecContext(ctx, probe); err != nil {
		return fmt.Errorf("subject: adding the grants' column to %s: %w", s.cfg.KeysTable, errors.Join(aerr, err))
	}
	return nil
}

// granted returns the per-subject columns of the namespace that unrevoked
// grants open, from the verified ledger (read at most once per TTL, never
// under a lock, within grantReadTimeout); none without a ledger. Sealing
// does not wait on it: when the ledger cannot be read or verified, it
// answers none for a second, and a grant's holder opens the keys that
// sealed meanwhile once a refresh (RefreshGrants) writes their wraps.
func (s *Store) granted(ctx context.Context) (cols []grantedColumn, ever bool) {
	if s.cfg.Ledger == nil {
		return nil, false
	}
	s.grants.mu.Lock()
	cols, ever, fresh := s.grants.cols, s.grants.ever, time.Now().Before(s.grants.expires)
	s.grants.mu.Unlock()
	if fresh {
		return cols, ever
	}
	rctx, cancel := context.WithTimeout(ctx, grantReadTimeout)
	defer cancel()
	ttl := s.cfg.TTL
	st, err := s.cfg.Ledger.Verified(rctx, s.cfg.Keyring)
	if err != nil {
		st, ttl = nil, time.Second
	}
	cols, ever = grantedIn(st, s.cfg.Namespace), grantedEver(st, s.cfg.Namespace)
	s.grants.mu.Lock()
	s.grants.cols, s.grants.ever, s.grants.expires = cols, ever, time.Now().Add(ttl)
	s.grants.mu.Unlock()
	return cols, ever
}

// grantReadTimeout bounds the ledger read of granted: sealing never waits
// longer on it.
const grantReadTimeout = 2 * time.Second

// grantedIn lists the per-subject columns of namespace that st's unrevoked
// grants name, sorted.
func grantedIn(st *ledger.State, namespace string) []grantedColumn {
	if st == nil {
		return nil
	}
	var out []grantedColumn
	for _, g := range st.Grants {
		if !g.Live() {
			continue
		}
		for _, c := range st.SubjectColumns(g.Scopes) {
			gc := grantedColumn{c.Table, c.Column}
			if c.Namespace == namespace && !slices.Contains(out, gc) {
				out = append(out, gc)
			}
		}
	}
	slices.SortFunc(out, func(a, b grantedColumn) int { return strings.Compare(a.name(), b.name()) })
	return out
}

// grantedEver reports whether a grant of st, revoked or not, names a
// per-subject column of namespace: then a key row's wraps of a column no
// live grant opens are a revoked grant's, or planted, and are removed.
func grantedEver(st *ledger.State, namespace string) bool {
	if st == nil {
		return false
	}
	for _, g := range st.Grants {
		if slices.ContainsFunc(st.SubjectColumns(g.Scopes), func(c ledger.Column) bool { return c.Namespace == namespace }) {
			return true
		}
	}
	return false
}

// scopedWraps returns the scoped column of sk's row for cols: for each,
// uvarint(len(name)) name uvarint(len(wrap)) wrap, where wrap is sk's
// ScopePayload for the column sealed by the keyring's scope
// SubjectGrantScope(namespace, table, column) for the key's wrap context.
// A wrap in keep (the row's, by column) is kept as it is, so that a grant
// deriving from an older keyring key still opens it.
func (s *Store) scopedWraps(subject string, sk *keyring.SubjectKey, cols []grantedColumn, keep map[string][]byte) ([]byte, error) {
	var out []byte
	wc := s.wrapContext(subject, sk.Version())
	for _, c := range cols {
		w, ok := keep[c.name()]
		if !ok {
			p, err := (*keycore.SubjectKey)(sk).ScopePayload(keyring.FieldScope(c.table, c.column))
			if err != nil {
				return nil, err
			}
			w, err = s.cfg.Keyring.Scope(keyring.SubjectGrantScope(s.cfg.Namespace, c.table, c.column)).Seal(p, wc)
			clear(p)
			if err != nil {
				return nil, fmt.Errorf("subject: wrapping %s's key of %s for grants: %w", subject, c.name(), err)
			}
		}
		out = appendEntry(appendEntry(out, []byte(c.name())), w)
	}
	return out, nil
}

func appendEntry(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// parseScoped parses a scoped column into its wraps by column name; a
// column a database writer mangled parses as far as it holds.
func parseScoped(b []byte) map[string][]byte {
	out := map[string][]byte{}
	for len(b) > 0 {
		name, rest, ok := cutEntry(b)
		if !ok {
			break
		}
		wrap, rest2, ok := cutEntry(rest)
		if !ok {
			break
		}
		out[string(name)] = wrap
		b = rest2
	}
	return out
}

func cutEntry(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// fillScoped makes sure a keyring-wrapped key about to seal holds a wrap
// for every granted column, so that a grant opens what it seals, and no
// other: a wrap of a column no live grant opens (a revoked grant's, or one
// a database writer put back) is removed before the key seals.
func (s *Store) fillScoped(ctx context.Context, subject string, sk *keyring.SubjectKey) error {
	cols, ever := s.granted(ctx)
	if len(cols) == 0 && !ever {
		return nil
	}
	p := s.cfg.Dialect.Placeholder
	var scoped []byte
	var tooLong sql.NullBool // NULL for a row without wraps
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s, %s FROM %s WHERE namespace = %s AND subject = %s AND version = %s AND held = 0`,
		scopedCol.Value(), sqltable.TooLong(scopedCol), s.keys, p(1), p(2), p(3)), s.cfg.Namespace, subject, int64(sk.Version())).Scan(&scoped, &tooLong)
	if err != nil {
		return fmt.Errorf("subject: reading the grants' wraps of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	// Nothing to write when the row holds exactly the granted columns'
	// wraps (none at all, with no column granted).
	have := parseScoped(scoped)
	same := !tooLong.Bool && len(have) == len(cols) && (len(cols) > 0 || scoped == nil)
	for _, c := range cols {
		_, ok := have[c.name()]
		same = same && ok
	}
	if same {
		return nil
	}
	return s.writeScoped(ctx, subject, sk, cols, have)
}

// writeScoped stores sk's wraps for cols in its row (still keyring-held),
// keeping those in keep.
func (s *Store) writeScoped(ctx context.Context, subject string, sk *keyring.SubjectKey, cols []grantedColumn, keep map[string][]byte) error {
	w, err := s.scopedWraps(subject, sk, cols, keep)
	if err != nil {
		return err
	}
	p := s.cfg.Dialect.Placeholder
	_, err = s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET scoped = %s WHERE namespace = %s AND subject = %s AND version = %s AND held = 0`,
		s.keys, p(1), p(2), p(3), p(4)), w, s.cfg.Namespace, subject, int64(sk.Version()))
	if err != nil {
		return fmt.Errorf("subject: storing the grants' wraps of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return nil
}

// RefreshGrants brings, for every keyring-wrapped key of the namespace,
// the wraps of the per-subject columns that unrevoked grants open now (read
// from the ledger, which must record them) up to date: it removes the
// wraps of columns no grant opens any more and adds the missing ones,
// sealed under the keyring's primary key. With rewrite it seals every
// wrap again under the primary, so that a grant deriving only from older
// keys opens none of them: after a revocation, once the keyring rotated.
// Run it after recording a grant of a per-subject column (ward grant
// does) and after revoking one (ward grant revoke does, before and after
// its rotation). It returns how many keys it wrote.
func (s *Store) RefreshGrants(ctx context.Context, rewrite bool) (int64, error) {
	if s.cfg.Ledger == nil {
		return 0, errors.New("subject: RefreshGrants needs Config.Ledger, which records the grants")
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring) // here an error is the caller's
	if err != nil {
		return 0, fmt.Errorf("subject: reading the grants of %s: %w", s.cfg.Namespace, err)
	}
	cols := grantedIn(st, s.cfg.Namespace)
	s.grants.mu.Lock()
	s.grants.cols, s.grants.expires = cols, time.Now().Add(s.cfg.TTL)
	s.grants.mu.Unlock()
	var n int64
	err = s.scan(ctx, 500, func(rows []keyRow) error {
		for _, r := range rows {
			if r.held != heldByKeyring {
				continue
			}
			wrote, err := s.refreshRow(ctx, r, cols, rewrite)
			if err != nil {
				return err
			}
			if wrote {
				n++
			}
		}
		return nil
	})
	return n, err
}

// refreshRow is RefreshGrants for one key row; it reports whether it wrote.
func (s *Store) refreshRow(ctx context.Context, r keyRow, cols []grantedColumn, rewrite bool) (bool, error) {
	var keep map[string][]byte
	if !rewrite {
		p := s.cfg.Dialect.Placeholder
		var scoped []byte
		err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE namespace = %s AND subject = %s AND version = %s`,
			scopedCol.Value(), s.keys, p(1), p(2), p(3)), s.cfg.Namespace, r.subject, r.version).Scan(&scoped)
		if err != nil {
			return false, fmt.Errorf("subject: reading the grants' wraps of %s/%s: %w", s.cfg.Namespace, r.subject, err)
		}
		keep = parseScoped(scoped)
		same := len(keep) == len(cols)
		for _, c := range cols {
			_, ok := keep[c.name()]
			same = same && ok
		}
		if same {
			return false, nil
		}
	}
	sk, err := s.cfg.Keyring.UnwrapSubjectKey(r.wrapped, s.wrapContext(r.subject, uint32(r.version)))
	if err != nil {
		return false, fmt.Errorf("subject: unwrapping the key of %s/%s version %d: %w", s.cfg.Namespace, r.subject, r.version, err)
	}
	defer sk.Destroy()
	return true, s.writeScoped(ctx, r.subject, sk, cols, keep)
}

// GrantKeys opens, for the holder of a grant of a per-subject column, each
// subject's key of that column from the subject's key row (read on every
// use, at most Config.TTL apart): a field.SubjectKeys for
// field.GrantColumn with field.PerSubject. It never seals, and a subject
// without a wrap for the column — forgotten, private, or whose key has not
// sealed since the grant was issued and refreshed — does not open
// (field.ErrSubjectKeyMissing).
type GrantKeys struct {
	db                       *dbRef
	namespace, table, column string
	scope                    *keycore.Scope
	ttl                      time.Duration
	mu                       sync.Mutex
	cache                    map[grantKeyID]grantEntry
}

type dbRef struct {
	cfg  Config
	keys string
}

type grantKeyID struct {
	subject string
	version uint32
}

type grantEntry struct {
	key     *keyring.SubjectKey
	expires time.Time
}

// NewGrantKeys returns the grant reader of table.column, whose keys live in
// cfg's tables (cfg.Keyring is not used: a grant holder has none; cfg.TTL
// bounds how long an unwrapped key is kept).
func NewGrantKeys(cfg Config, g *keyring.Grant, table, column string) (*GrantKeys, error) {
	ns, scope, err := (*keycore.Grant)(g).SubjectScope(table, column)
	if err != nil {
		return nil, err
	}
	if cfg.DB == nil {
		return nil, errors.New("subject: GrantKeys needs Config.DB and Dialect")
	}
	if cfg.KeysTable == "" {
		cfg.KeysTable = DefaultKeysTable
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Namespace = ns
	keys, err := cfg.Dialect.Quote(cfg.KeysTable)
	if err != nil {
		return nil, err
	}
	return &GrantKeys{db: &dbRef{cfg: cfg, keys: keys}, namespace: ns, table: table, column: column, scope: scope, ttl: cfg.TTL, cache: map[grantKeyID]grantEntry{}}, nil
}

// SealingKey refuses: a grant never seals.
func (r *GrantKeys) SealingKey(string) (*keyring.SubjectKey, error) {
	return nil, keyring.ErrGrantSeals
}

// OpeningKey returns subject's key of the column for version, unwrapped
// from the key row with the grant.
func (r *GrantKeys) OpeningKey(subject string, version uint32) (*keyring.SubjectKey, error) {
	id := grantKeyID{subject, version}
	r.mu.Lock()
	if e, ok := r.cache[id]; ok && time.Now().Before(e.expires) {
		r.mu.Unlock()
		return e.key, nil
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), r.db.cfg.Timeout)
	defer cancel()
	p := r.db.cfg.Dialect.Placeholder
	var scoped []byte
	var tooLong sql.NullBool
	err := r.db.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s, %s FROM %s WHERE namespace = %s AND subject = %s AND version = %s AND held = 0`,
		scopedCol.Value(), sqltable.TooLong(scopedCol), r.db.keys, p(1), p(2), p(3)), r.namespace, subject, int64(version)).Scan(&scoped, &tooLong)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("subject: reading the key of %s/%s: %w", r.namespace, subject, err)
	}
	wrap, ok := parseScoped(scoped)[r.table+"."+r.column]
	if err != nil || tooLong.Bool || !ok {
		return nil, fmt.Errorf("%w: %s/%s version %d holds no key of %s.%s for grants (forgotten, private, or not sealed since the grant)", field.ErrSubjectKeyMissing, r.namespace, subject, version, r.table, r.column)
	}
	st := &Store{cfg: r.db.cfg}
	payload, err := r.scope.Open(wrap, st.wrapContext(subject, version))
	if err != nil {
		return nil, fmt.Errorf("subject: unwrapping %s/%s's key of %s.%s with the grant: %w", r.namespace, subject, r.table, r.column, err)
	}
	defer clear(payload)
	ck, err := keycore.GrantedSubjectKey(payload, keyring.FieldScope(r.table, r.column))
	if err != nil {
		return nil, err
	}
	sk := (*keyring.SubjectKey)(ck)
	if sk.Version() != version {
		return nil, fmt.Errorf("subject: %s/%s: a granted key names version %d, its row %d: %w", r.namespace, subject, sk.Version(), version, keyring.ErrMalformed)
	}
	r.mu.Lock()
	if len(r.cache) >= DefaultMaxEntries {
		clear(r.cache)
	}
	r.cache[id] = grantEntry{sk, time.Now().Add(r.ttl)}
	r.mu.Unlock()
	return sk, nil
}
