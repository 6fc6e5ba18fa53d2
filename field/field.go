// Package field encrypts database columns in the application, before values
// reach the database.
//
// A [Column] seals values with a [keyring.Keyring] and binds each one to
// where it lives: table, column, row key and, with [Bind], the values of
// the columns that decide who may read it (an owner, a conversation). A
// ciphertext copied to another row or column, or left in a row whose bound
// columns were changed, fails to open with [keyring.ErrWrongContext]. [Ciphertext]
// implements [driver.Valuer] and [sql.Scanner], so application code passes
// plaintext to Seal and gets plaintext back from Open while the database
// only ever holds ciphertext. SQL NULL stays NULL; the empty string is
// encrypted like any other value.
//
// [BlindIndex] supports equality search without decryption; the jobs of
// package reseal (field/reseal) move a column to the keyring's primary
// key, the current ciphertext version and the current binding; [Ledger] records which keyring and key
// IDs a database's values use, so that a service refuses a keyring that
// cannot open them.
//
// Most users should create one Column per encrypted column at start-up and
// share it; Columns are safe for concurrent use.
package field

import (
	"bytes"
	"crypto/fips140"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/observe"
)

// ErrNull is returned when a NULL value is opened into a destination that
// cannot hold NULL.
var ErrNull = errors.New("field: value is NULL")

// Encoding selects how a Column stores ciphertexts.
type Encoding uint8

const (
	// Binary stores the binary form, for BLOB and BYTEA columns. It is
	// the default.
	Binary Encoding = iota
	// Text stores the "w4:" ("w3:" before ciphertext v4) base64url text form, for TEXT and VARCHAR
	// columns. It is a third larger.
	Text
)

// Column seals and opens the values of one database column.
type Column struct {
	kr            *keyring.Keyring
	core          *keycore.Keyring // kr, for the sealing and opening paths (nil for a grant)
	table         string
	name          string
	enc           Encoding
	bind          []string // bound columns, in order (nil: row key only)
	legacy        bool     // also open values bound without the bound columns (AcceptLegacyBinding)
	currentOnly   bool     // refuse ciphertext versions before the current one (RefuseLegacyForms)
	mixed         bool     // also read values that are not ciphertexts as plaintext
	prefix        []byte   // v3 context prefix under the column's binding
	prefix4       []byte   // v4 context prefix (the bound columns' names)
	scopeName     string   // the column's v4 scope (keyring.FieldScope)
	scope         *keycore.Scope
	ads4          *sync.Pool      // v4 associated-data buffers (see newAD4)
	v4Form        fleetgate.Form  // fleetgate.Ciphertext(4)
	unboundPrefix []byte          // v3 context prefix without bound columns
	prefixV2      []byte          // v2 context prefix (legacy values of a bound column)
	legacyPrefix  []byte          // v1 context prefix
	ads           *sync.Pool      // associated-data buffers (see newAD)
	stats         *columnStats    // shared by the copies WithKeys makes
	subjects      SubjectKeys     // PerSubject: where subjects' own keys are
	subjectCol    string          // the bound column naming the subject
	subjectIdx    int             // its index in bind
	gate          *fleetgate.Gate // WithForms: which forms the fleet reads
	sealedForm    fleetgate.Form  // fleetgate.Sealed(table, column)
	subjectForm   fleetgate.Form  // fleetgate.Subject(table, column)
}

// ColumnOption configures a Column.
type ColumnOption func(*Column)

// WithEncoding selects the storage encoding (default [Binary]).
func WithEncoding(e Encoding) ColumnOption { return func(c *Column) { c.enc = e } }

// Bind binds every value also to the values of other columns of its row,
// in this order: a value then opens only in a row whose bound columns hold
// the same values. Bind what decides who may read a value (the owner, the
// conversation a message belongs to, its role): a database writer who
// re-points such a column makes the value fail to open instead of showing
// it to someone else. Seal and Open then need the values through
// [RowKey.With].
//
// Adding Bind to a column that holds values changes their context: turn on
// [AcceptLegacyBinding] and run a re-sealing job (package field/reseal),
// which re-binds every value, then turn it off.
func Bind(columns ...string) ColumnOption {
	return func(c *Column) { c.bind = append([]string(nil), columns...) }
}

// AcceptLegacyBinding makes Open accept, besides values bound under the
// column's bound columns, values bound to table, column and row key only
// (written before Bind was declared: the v1 context for ciphertext v1 and
// v2, the v3 context without bound columns for v3). It is for the time
// a re-binding job runs: while it is on, a database writer can still move
// an old value to another owner. [Column.LegacyOpens] counts such opens.
func AcceptLegacyBinding() ColumnOption { return func(c *Column) { c.legacy = true } }

// ErrLegacyForm means a column that refuses legacy forms
// ([RefuseLegacyForms]) met a value in an earlier ciphertext version.
var ErrLegacyForm = errors.New("field: value in a legacy ciphertext version, which this column refuses")

// RefuseLegacyForms makes Open refuse values in earlier ciphertext versions
// (v1 and v2, with their row-only and v2 contexts) with [ErrLegacyForm].
// Turn it on for good once a job has moved every value of the column to
// the current version (the census's PerVersion shows none left): from then
// on a database writer cannot put back a value from an older backup whose
// weaker binding the column would otherwise accept.
func RefuseLegacyForms() ColumnOption { return func(c *Column) { c.currentOnly = true } }

// AcceptPlaintext is the mixed-read mode of a column moving from
// plaintext to ciphertext while the application runs: Open returns a
// stored value that does not parse as a ward ciphertext as it is, and
// counts it ([Column.PlaintextReads]), while everything written is sealed.
// A value that parses as a ward ciphertext must open; it is never taken
// for plaintext. Turn it on for the migration only (a job of package
// field/reseal with FromPlaintext encrypts the existing rows; its census says when no
// plaintext is left), then off: while it is on, a database writer can
// plant plaintext that the application will show (SECURITY.md).
func AcceptPlaintext() ColumnOption { return func(c *Column) { c.mixed = true } }

// WithForms makes the column write only forms that every process of the
// fleet reads (package fleetgate; the gate's fleet member opens them). The
// column declares that it reads ciphertexts (fleetgate.Sealed), ciphertext v3
// and, with [PerSubject], subject-sealed values (fleetgate.Subject), and asks
// for them to open. Until the fleet opens them:
//
//   - a column in mixed mode ([AcceptPlaintext]) writes plaintext: Seal
//     returns a [Ciphertext] whose Value is the plaintext (IsPlaintext),
//     so that a process still reading the column as plaintext reads what
//     this one wrote; a plaintext that would read as a ciphertext is
//     refused with an error matching [fleetgate.ErrNotOpen];
//   - a [PerSubject] column seals under keyring keys, which every process
//     opens, instead of subjects' keys.
//
// [Column.AppendSeal], the batch form for jobs, always seals. A column
// without mixed mode always seals too: it records that the database
// depends on ciphertexts, so that a process that cannot read them refuses
// to start.
func WithForms(g *fleetgate.Gate) ColumnOption { return func(c *Column) { c.gate = g } }

// SubjectKeys finds subjects' own data keys for a column declared with
// [PerSubject]. Package field/subject implements it over a table of
// wrapped keys in the application's database, with a cache.
type SubjectKeys interface {
	// SealingKey returns the subject's current key, creating the
	// subject's first key if it has none. For an erased subject it
	// returns an error matching [ErrSubjectErased].
	SealingKey(subject string) (*keyring.SubjectKey, error)
	// OpeningKey returns the subject's key of the given version: an
	// error matching [ErrSubjectErased] if the subject was forgotten,
	// [ErrSubjectKeyMissing] if the key is gone without a tombstone.
	OpeningKey(subject string, version uint32) (*keyring.SubjectKey, error)
}

// Errors of subject keys ([PerSubject]).
var (
	// ErrSubjectErased means the value's subject was forgotten: its key
	// was deleted and an authenticated tombstone says so. The value will
	// never open again.
	ErrSubjectErased = errors.New("field: the subject was erased")
	// ErrSubjectKeyMissing means the subject key a value names is not in
	// the database and no authenticated tombstone explains it: deleted by
	// a database writer (denial of service, SECURITY.md), or the wrong
	// database.
	ErrSubjectKeyMissing = errors.New("field: the subject's key is missing and no tombstone explains it")
	// ErrSubjectLocked means the subject's key is held by the user (keys
	// wrapped under a key from their password): it opens only through a
	// live session of theirs (field/subject.Store.Session), never from the
	// database and keyring alone.
	ErrSubjectLocked = errors.New("field: the subject's key is held by the user: open it through their live session")
	// ErrSubjectKeyLost means the value was sealed under a user-held key
	// whose password was reset without a recovery path: it will not open
	// again.
	ErrSubjectKeyLost = errors.New("field: the subject's user-held key was lost in a password reset")
	// ErrNotPerSubject means a value sealed under a subject key was given
	// to a column not declared with [PerSubject].
	ErrNotPerSubject = errors.New("field: value sealed under a subject key, but the column has no subject keys")
)

// PerSubject seals the column's values under the own key of the subject
// (user, tenant) whose ID the bound column subjectColumn holds — a column
// that [Bind] must also name, so that a value moved to another subject
// does not open (key class 2 of ciphertext v3). Values sealed under
// keyring keys before the column opted in still open; a re-sealing job
// moves them to subject keys. Forgetting a subject
// (field/subject.Store.Forget) then makes every one of its values fail
// with [ErrSubjectErased].
func PerSubject(keys SubjectKeys, subjectColumn string) ColumnOption {
	return func(c *Column) { c.subjects, c.subjectCol = keys, subjectColumn }
}

// NewColumn returns a Column for table.column under kr. Table and column
// names are part of every value's context: renaming either makes existing
// values fail to open with [keyring.ErrWrongContext].
func NewColumn(kr *keyring.Keyring, table, column string, opts ...ColumnOption) (*Column, error) {
	if kr == nil {
		return nil, errors.New("field: nil keyring")
	}
	c, err := newColumn(kr, table, column, opts)
	if err != nil {
		return nil, err
	}
	c.scope = c.core.Scope(c.scopeName)
	return c, nil
}

// GrantColumn returns a column that opens, with a grant
// ([keyring.Grant]), the ciphertext v4 values of table.column — the
// reader of one column, such as an analytics job — and nothing else: it
// never seals ([keyring.ErrGrantSeals]), values of other columns fail
// with [keyring.ErrWrongContext], and values in older versions with
// [keyring.ErrNotGranted] (ward reseal moves a column to v4). It takes the
// options of NewColumn that decide how values open (Bind, WithEncoding,
// AcceptLegacyBinding, RefuseLegacyForms). For a column sealed under
// subjects' own keys, pass PerSubject with a subject.GrantKeys of the
// grant: it opens the values of ordinary users whose key rows hold the
// grant's wrap, and nothing of a forgotten or private user.
func GrantColumn(g *keyring.Grant, table, column string, opts ...ColumnOption) (*Column, error) {
	if g == nil {
		return nil, errors.New("field: nil grant")
	}
	c, err := newColumn(nil, table, column, opts)
	if err != nil {
		return nil, err
	}
	if c.subjects != nil {
		// A per-subject column: values open with the keys PerSubject
		// gives (subject.GrantKeys), which the grant unwraps from each
		// subject's key row; values under keyring keys, none.
		cg := (*keycore.Grant)(g)
		if _, _, err := cg.SubjectScope(table, column); err != nil {
			return nil, fmt.Errorf("field: %w", err)
		}
		c.scope = cg.NoScope(table, column)
		return c, nil
	}
	s, err := (*keycore.Grant)(g).Scope(table, column)
	if err != nil {
		return nil, fmt.Errorf("field: %w", err)
	}
	c.scope = s
	return c, nil
}

// newColumn builds a column; kr is nil for a grant's.
func newColumn(kr *keyring.Keyring, table, column string, opts []ColumnOption) (*Column, error) {
	if table == "" || column == "" {
		return nil, errors.New("field: table and column names are required")
	}
	c := &Column{kr: kr, core: (*keycore.Keyring)(kr), table: table, name: column, stats: &columnStats{}}
	for _, o := range opts {
		o(c)
	}
	if c.enc != Binary && c.enc != Text {
		return nil, fmt.Errorf("field: unknown encoding %d", c.enc)
	}
	for _, b := range c.bind {
		if b == "" || b == column {
			return nil, fmt.Errorf("field: %s.%s cannot bind %q", table, column, b)
		}
	}
	if c.legacy && c.bind == nil {
		return nil, fmt.Errorf("field: %s.%s: AcceptLegacyBinding needs Bind", table, column)
	}
	if c.legacy && c.currentOnly {
		return nil, fmt.Errorf("field: %s.%s: AcceptLegacyBinding and RefuseLegacyForms exclude each other", table, column)
	}
	if c.subjects != nil {
		c.subjectIdx = slices.Index(c.bind, c.subjectCol)
		if c.subjectIdx < 0 {
			return nil, fmt.Errorf("field: %s.%s: PerSubject(%q) needs Bind to name the subject column", table, column, c.subjectCol)
		}
	}
	c.legacyPrefix = appendContextPrefixV1(nil, table, column)
	c.prefix = appendContextPrefix(nil, contextDomainV3, table, column, c.bind)
	c.unboundPrefix = appendContextPrefix(nil, contextDomainV3, table, column, nil)
	if c.bind != nil {
		c.prefixV2 = appendContextPrefix(nil, contextDomainV2, table, column, c.bind)
	}
	c.ads = &sync.Pool{New: c.newAD}
	c.prefix4 = appendBoundNames(nil, c.bind)
	c.scopeName = keyring.FieldScope(table, column)
	c.ads4 = &sync.Pool{New: c.newAD4}
	c.sealedForm, c.subjectForm = fleetgate.Sealed(table, column), fleetgate.Subject(table, column)
	c.v4Form = fleetgate.Ciphertext(version4)
	c.gate.Declare(fleetgate.Ciphertext(version3))
	c.gate.Want(c.sealedForm, c.v4Form)
	if c.subjects != nil {
		c.gate.Want(c.subjectForm)
	}
	return c, nil
}

// SealedSize returns how many bytes (in the text form, ASCII characters)
// a value of n plaintext bytes takes once sealed into the column, in its
// encoding under the keyring's primary key: what a VARCHAR or VARBINARY
// column must hold (a key of another algorithm may add up to 12 bytes;
// docs/ADOPTING.md). For a grant's column, which never seals, it is 0.
func (c *Column) SealedSize(n int) int {
	if c.kr == nil {
		return 0
	}
	b := keycore.Overhead(c.kr.Primary().Algorithm) + n
	if c.enc == Text {
		return len("w4:") + base64.RawURLEncoding.EncodedLen(b)
	}
	return b
}

// Table returns the column's table name.
func (c *Column) Table() string { return c.table }

// Name returns the column's name.
func (c *Column) Name() string { return c.name }

// Bound returns the names of the bound columns (nil without Bind).
func (c *Column) Bound() []string { return c.bind }

// Encoding returns how the column stores values (Binary or Text).
func (c *Column) Encoding() Encoding { return c.enc }

// SubjectColumn returns the bound column naming each value's subject
// ("" without [PerSubject]).
func (c *Column) SubjectColumn() string { return c.subjectCol }

// Keyring returns the keyring the column seals with.
func (c *Column) Keyring() *keyring.Keyring { return c.kr } // nil for a grant's column (GrantColumn)

// LegacyOpens counts values opened without their bound columns by
// [AcceptLegacyBinding]: zero once a re-binding job has finished.
func (c *Column) LegacyOpens() uint64 { return c.stats.legacyOpens.Load() }

// PlaintextReads counts the values Open returned as plaintext under
// [AcceptPlaintext]: the progress of a migration, as the application
// sees it.
func (c *Column) PlaintextReads() uint64 { return c.stats.plainReads.Load() }

// Context returns the associated data a value in row is bound to, for
// tools that seal outside this package (ward decrypt --table).
func (c *Column) Context(row RowKey) ([]byte, error) { return c.context(nil, &row) }

// Seal encrypts plaintext for row (or, for a column in mixed mode whose
// fleet does not read ciphertexts yet, returns it as plaintext:
// [WithForms]).
func (c *Column) Seal(row RowKey, plaintext []byte) (Ciphertext, error) {
	if c.mixed && !c.gate.Allows(c.sealedForm) {
		if o := observe.Get(); o != nil {
			o.Value(observe.Value{Op: observe.Seal, Class: "plaintext"})
		}
		return c.plainForm(plaintext)
	}
	ct, err := c.AppendSeal(nil, row, plaintext)
	if err != nil {
		return Ciphertext{}, err
	}
	return Ciphertext{data: ct, valid: true, text: c.enc == Text}, nil
}

// WriteVersion returns the ciphertext version Seal writes now: 4 once
// the fleet reads it ([WithForms]; at once without a gate, and always in
// the FIPS 140-3 mode, where v3 cannot be sealed), else 3.
func (c *Column) WriteVersion() byte {
	if fips140.Enabled() || c.gate.Allows(c.v4Form) {
		return version4
	}
	return version3
}

// AppendSeal appends the binary ciphertext of plaintext for row to dst,
// for callers that reuse buffers (large values, batch jobs).
func (c *Column) AppendSeal(dst []byte, row RowKey, plaintext []byte) ([]byte, error) {
	out, err := c.appendSeal(dst, &row, plaintext)
	if o := observe.Get(); o != nil {
		report(o, observe.Seal, out[len(dst):], err)
	}
	return out, err
}

// appendSeal is AppendSeal, unobserved.
func (c *Column) appendSeal(dst []byte, row *RowKey, plaintext []byte) ([]byte, error) {
	if c.kr == nil {
		return dst, fmt.Errorf("field: sealing %s.%s: %w", c.table, c.name, keyring.ErrGrantSeals)
	}
	if c.WriteVersion() == version4 {
		return c.appendSealV4(dst, row, plaintext)
	}
	adp := c.getAD()
	ad, err := c.contextTail(*adp, row)
	if err == nil {
		if cap(ad)-len(ad) < sealWork {
			ad = slices.Grow(ad, sealWork) // kept: the pool gets it back
		}
		var out []byte
		if c.subjects != nil && c.gate.Allows(c.subjectForm) {
			var sk *keyring.SubjectKey
			if sk, err = c.sealingKey(row); err == nil {
				out, err = (*keycore.SubjectKey)(sk).AppendSealAD(dst, plaintext, ad)
			}
		} else {
			out, err = c.core.AppendSealAD(dst, plaintext, ad)
		}
		c.putAD(adp, ad, true)
		if err == nil {
			return out, nil
		}
	} else {
		c.putAD(adp, *adp, true)
	}
	return dst, fmt.Errorf("field: sealing %s.%s: %w", c.table, c.name, err)
}

// appendSealV4 is AppendSeal for a v4 value: under the column's scope of
// the primary key, or of the row's subject key.
func (c *Column) appendSealV4(dst []byte, row *RowKey, plaintext []byte) ([]byte, error) {
	adp := c.ads4.Get().(*[]byte)
	ad, err := c.contextTail(*adp, row)
	if err != nil {
		c.putAD4(adp, *adp, true)
		return dst, fmt.Errorf("field: sealing %s.%s: %w", c.table, c.name, err)
	}
	if cap(ad)-len(ad) < sealWork {
		ad = slices.Grow(ad, sealWork)
	}
	var out []byte
	if c.subjects != nil && c.gate.Allows(c.subjectForm) {
		var sk *keyring.SubjectKey
		if sk, err = c.sealingKey(row); err == nil {
			out, err = (*keycore.SubjectKey)(sk).AppendSealScopedAD(dst, plaintext, c.scopeName, ad)
		}
	} else {
		out, err = c.scope.AppendSealAD(dst, plaintext, ad)
	}
	c.putAD4(adp, ad, true)
	if err != nil {
		return dst, fmt.Errorf("field: sealing %s.%s: %w", c.table, c.name, err)
	}
	return out, nil
}

// newAD4 makes a v4 associated-data buffer: the header's room and the
// column's v4 prefix, as newAD for v3.
func (c *Column) newAD4() any { return newPrefixed(c.prefix4) }

// putAD4 is putAD for v4 buffers.
func (c *Column) putAD4(p *[]byte, ad []byte, prefixed bool) {
	repool(c.ads4, c.prefix4, p, ad, prefixed)
}

// newPrefixed makes an associated-data buffer: the header's room, then
// prefix, with room for a row's part.
func newPrefixed(prefix []byte) *[]byte {
	b := make([]byte, 0, keycore.HeaderRoom+len(prefix)+96)
	b = append(b[:keycore.HeaderRoom], prefix...)
	return &b
}

// repool returns buffer p to pool holding ad, what was assembled in it;
// prefixed says prefix is still in place after the header's room (else it
// is written again). A buffer grown past 4 KiB (a value bound to long
// texts) is dropped, so that the pool does not pin it.
func repool(pool *sync.Pool, prefix []byte, p *[]byte, ad []byte, prefixed bool) {
	if cap(ad) > 4096 {
		return
	}
	if prefixed {
		*p = ad[:keycore.HeaderRoom+len(prefix)]
	} else {
		*p = append(ad[:keycore.HeaderRoom], prefix...)
	}
	pool.Put(p)
}

// The buffers of a column's adPool hold a value's associated data under
// assembly: room for the ciphertext's header, which the keyring writes
// ([keycore.HeaderRoom]), then the column's v3 context prefix, which is
// the same for every value and is kept there between uses, so that a seal
// or an open appends only the row's part of the context. One buffer
// handed to the keyring lets the AEAD read it without a copy; the pool
// exists because the AEAD is called through an interface, so a stack
// buffer would escape (an allocation per value).
func (c *Column) newAD() any { return newPrefixed(c.prefix) }

// sealWork is the spare capacity the keyring's context check uses as its
// work area when sealing (see keycore.Keyring.AppendSealAD).
const sealWork = 32

// getAD returns a pooled buffer holding the header's room and the
// column's v3 context prefix.
func (c *Column) getAD() *[]byte { return c.ads.Get().(*[]byte) }

// putAD returns the buffer p to the pool with ad, what was assembled in
// it (possibly grown). prefixed says the v3 prefix is still in place (the
// buffer was used for a v3 context); otherwise it is written again. A
// buffer that grew past 4 KiB (a value bound to long texts) is dropped,
// so that the pool does not pin it.
func (c *Column) putAD(p *[]byte, ad []byte, prefixed bool) { repool(c.ads, c.prefix, p, ad, prefixed) }

// Subject returns the subject a row's value belongs to under [PerSubject]:
// the text of the bound subject column.
func (c *Column) Subject(row RowKey) (string, error) {
	if c.subjects == nil {
		return "", fmt.Errorf("field: %s.%s has no subject keys", c.table, c.name)
	}
	if err := c.checkBinding(&row); err != nil {
		return "", err
	}
	v := row.bound()[c.subjectIdx]
	if v.null || v.text == "" {
		return "", fmt.Errorf("%w: %s.%s: the subject column %s is NULL or empty", ErrBinding, c.table, c.name, c.subjectCol)
	}
	return v.text, nil
}

// columnStats are a column's counters.
type columnStats struct {
	legacyOpens, plainReads atomic.Uint64
}

// WithKeys returns the column using keys to find subject keys instead of
// the ones [PerSubject] declared: for one request that carries a user's
// unlocked keys (field/subject.Store.Session), so that values of a
// user-held subject open during the request and nowhere else. The copy
// shares the column's counters; it is cheap to make per request.
func (c *Column) WithKeys(keys SubjectKeys) *Column {
	if c.subjects == nil || keys == nil {
		return c
	}
	cp := *c
	cp.subjects = keys
	return &cp
}

// SubjectKeys returns where the column finds subject keys (nil without
// [PerSubject]).
func (c *Column) SubjectKeys() SubjectKeys { return c.subjects }

// PerSubject reports whether the column seals under subject keys.
func (c *Column) PerSubject() bool { return c.subjects != nil }

// sealingKey finds the subject key of a row whose binding context()
// already checked.
func (c *Column) sealingKey(row *RowKey) (*keyring.SubjectKey, error) {
	v := row.bound()[c.subjectIdx]
	if v.null || v.text == "" {
		return nil, fmt.Errorf("%w: %s.%s: the subject column %s is NULL or empty", ErrBinding, c.table, c.name, c.subjectCol)
	}
	return c.subjects.SealingKey(v.text)
}

// open opens a binary ciphertext with the key its header names: a keyring
// key, or (class 2) the row's subject key. ad is the header's room
// followed by the context (see adPool).
func (c *Column) open(dst []byte, row *RowKey, ciphertext, ad []byte) ([]byte, error) {
	if !keycore.IsSubjectSealed(ciphertext) {
		if ciphertext[0] == version4 {
			return c.scope.AppendOpenAD(dst, ciphertext, ad)
		}
		if c.kr == nil { // a grant: it says why
			return c.scope.AppendOpenAD(dst, ciphertext, ad)
		}
		return c.core.AppendOpenAD(dst, ciphertext, ad)
	}
	return c.openSubject(dst, row, ciphertext, ad)
}

// openSubject opens a class-2 value with the row's subject key.
func (c *Column) openSubject(dst []byte, row *RowKey, ciphertext, ad []byte) ([]byte, error) {
	version, ok := keycore.SubjectKeyVersion(ciphertext)
	if !ok {
		_, err := keycore.KeyIDOf(ciphertext) // why the header does not parse
		return dst, err
	}
	if c.subjects == nil {
		return dst, ErrNotPerSubject
	}
	// The row's binding was checked when the context was built.
	v := row.bound()[c.subjectIdx]
	if v.null || v.text == "" {
		return dst, fmt.Errorf("%w: %s.%s: the subject column %s is NULL or empty", ErrBinding, c.table, c.name, c.subjectCol)
	}
	sk, err := c.subjects.OpeningKey(v.text, version)
	if err != nil {
		return dst, err
	}
	k := (*keycore.SubjectKey)(sk)
	if ciphertext[0] == version4 {
		return k.AppendOpenScopedAD(dst, ciphertext, c.scopeName, ad)
	}
	return k.AppendOpenAD(dst, ciphertext, ad)
}

// AppendOpen appends the plaintext of a binary ciphertext for row to dst.
// On error dst is returned unchanged.
func (c *Column) AppendOpen(dst []byte, row RowKey, ciphertext []byte) ([]byte, error) {
	out, err := c.appendOpen(dst, &row, ciphertext)
	if o := observe.Get(); o != nil {
		report(o, observe.Open, ciphertext, err)
	}
	return out, err
}

// appendOpen is AppendOpen, unobserved.
func (c *Column) appendOpen(dst []byte, row *RowKey, ciphertext []byte) ([]byte, error) {
	if len(ciphertext) == 0 {
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: keyring.ErrTruncated}
	}
	if c.currentOnly && ciphertext[0] < version3 {
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: ErrLegacyForm}
	}
	if ciphertext[0] == version4 {
		return c.appendOpenV4(dst, row, ciphertext)
	}
	adp := c.getAD()
	var ad []byte
	var err error
	current := ciphertext[0] == version3
	if current {
		ad, err = c.contextTail(*adp, row)
	} else {
		ad, err = c.contextFor((*adp)[:keycore.HeaderRoom], row, ciphertext[0])
	}
	if err != nil {
		c.putAD(adp, *adp, false)
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: err}
	}
	out, err := c.open(dst, row, ciphertext, ad)
	if err != nil && c.legacy && errors.Is(err, keyring.ErrWrongContext) {
		current = false
		ad = c.unboundContextFor(ad[:keycore.HeaderRoom], row, ciphertext[0])
		if out, err = c.open(dst, row, ciphertext, ad); err == nil {
			c.stats.legacyOpens.Add(1)
		}
	}
	c.putAD(adp, ad, current)
	if err != nil {
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: err}
	}
	return out, nil
}

// appendOpenV4 is AppendOpen for a v4 value.
func (c *Column) appendOpenV4(dst []byte, row *RowKey, ciphertext []byte) ([]byte, error) {
	adp := c.ads4.Get().(*[]byte)
	ad, err := c.contextTail(*adp, row)
	if err != nil {
		c.putAD4(adp, *adp, true)
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: err}
	}
	prefixed := true
	out, err := c.open(dst, row, ciphertext, ad)
	if err != nil && c.legacy && errors.Is(err, keyring.ErrWrongContext) {
		prefixed = false
		ad = c.unboundContextFor(ad[:keycore.HeaderRoom], row, version4)
		if out, err = c.open(dst, row, ciphertext, ad); err == nil {
			c.stats.legacyOpens.Add(1)
		}
	}
	c.putAD4(adp, ad, prefixed)
	if err != nil {
		return dst, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: err}
	}
	return out, nil
}

// OpenRebinding is Open for jobs that re-bind a column: for a column with
// bound columns, it also accepts a value bound without them (sealed before
// [Bind] was declared), whether or not the column accepts that in Open
// ([AcceptLegacyBinding]).
func (c *Column) OpenRebinding(row RowKey, ct Ciphertext) ([]byte, error) {
	pt, err := c.Open(row, ct)
	if err == nil || c.bind == nil || c.legacy || !errors.Is(err, keyring.ErrWrongContext) {
		return pt, err
	}
	var buf [128]byte
	raw := ct.Bytes()
	open := c.scope.Open
	if raw[0] != version4 && c.kr != nil {
		open = c.kr.Open
	}
	if pt, err = open(raw, c.unboundContextFor(buf[:0], &row, raw[0])); err != nil {
		return nil, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: err}
	}
	return pt, nil
}

// Matches reports, from the value's context check and without decrypting,
// whether ct was sealed for row under the column's bound columns (bound),
// or without them (unbound, a value to re-bind). A match is a hint (the
// check is 32 bits); only Open authenticates.
func (c *Column) Matches(row RowKey, ct Ciphertext) (bound, unbound bool) {
	raw := ct.Bytes()
	if len(raw) == 0 {
		return false, false
	}
	var buf [128]byte
	matches := c.scope.ContextMatches
	if raw[0] != version4 && c.kr != nil {
		matches = c.core.ContextMatches
	}
	if cx, err := c.contextFor(buf[:0], &row, raw[0]); err == nil {
		bound, _ = matches(raw, cx)
	}
	if c.bind != nil {
		unbound, _ = matches(raw, c.unboundContextFor(buf[:0], &row, raw[0]))
	}
	return bound, unbound
}

// SealString encrypts s for row.
func (c *Column) SealString(row RowKey, s string) (Ciphertext, error) {
	return c.Seal(row, []byte(s))
}

// SealNullString encrypts s for row, or returns a NULL Ciphertext when s is
// not valid.
func (c *Column) SealNullString(row RowKey, s sql.NullString) (Ciphertext, error) {
	if !s.Valid {
		return Ciphertext{text: c.enc == Text}, nil
	}
	return c.SealString(row, s.String)
}

// Open decrypts ct, which must have been sealed for row of this column. A
// NULL ct returns [ErrNull]. Errors from the keyring ([keyring.ErrWrongContext],
// [keyring.ErrAuthentication], …) are wrapped in an [OpenError] naming the
// table, column and row.
func (c *Column) Open(row RowKey, ct Ciphertext) ([]byte, error) {
	if !ct.valid {
		return nil, ErrNull
	}
	if ct.plain != nil {
		if c.Damaged(ct) {
			return nil, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: &damagedError{ct.plain}}
		}
		if !c.mixed || ct.Newer() { // a newer release's ciphertext is never plaintext
			return nil, &OpenError{Table: c.table, Column: c.name, Row: row.String(), Err: &plaintextError{ct.plain}}
		}
		c.stats.plainReads.Add(1)
		if o := observe.Get(); o != nil {
			o.Value(observe.Value{Op: observe.Open, Class: "plaintext"})
		}
		return append([]byte(nil), ct.data...), nil
	}
	pt, err := c.AppendOpen(nil, row, ct.data)
	if err != nil {
		return nil, err
	}
	return pt, nil
}

// OpenString is like Open but returns a string.
func (c *Column) OpenString(row RowKey, ct Ciphertext) (string, error) {
	pt, err := c.Open(row, ct)
	return string(pt), err
}

// OpenNullString opens ct, returning an invalid NullString for NULL.
func (c *Column) OpenNullString(row RowKey, ct Ciphertext) (sql.NullString, error) {
	if !ct.valid {
		return sql.NullString{}, nil
	}
	s, err := c.OpenString(row, ct)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: s, Valid: true}, nil
}

// Scanner returns an [sql.Scanner] that decrypts the scanned value for row
// into dest, which must be a *string, *[]byte or *sql.NullString. Use it
// when the row key is known before the query runs:
//
//	db.QueryRow("SELECT body FROM messages WHERE id = ?", id).Scan(col.Scanner(field.RowInt(id), &body))
func (c *Column) Scanner(row RowKey, dest any) sql.Scanner {
	return &scanner{c: c, row: row, dest: dest}
}

type scanner struct {
	c    *Column
	row  RowKey
	dest any
}

func (s *scanner) Scan(src any) error {
	var ct Ciphertext
	if err := ct.Scan(src); err != nil {
		return err
	}
	switch d := s.dest.(type) {
	case *sql.NullString:
		v, err := s.c.OpenNullString(s.row, ct)
		if err != nil {
			return err
		}
		*d = v
	case *string:
		v, err := s.c.OpenString(s.row, ct)
		if err != nil {
			return err
		}
		*d = v
	case *[]byte:
		v, err := s.c.Open(s.row, ct)
		if err != nil {
			return err
		}
		*d = v
	default:
		return fmt.Errorf("field: cannot decrypt into %T (want *string, *[]byte or *sql.NullString)", s.dest)
	}
	return nil
}

// OpenError reports a value that failed to open, naming where it lives. It
// unwraps to the keyring's error ([keyring.ErrWrongContext], …).
type OpenError struct {
	Table, Column, Row string
	Err                error
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("field: %s.%s row %s: %v", e.Table, e.Column, e.Row, e.Err)
}

// Unwrap returns the underlying keyring error.
func (e *OpenError) Unwrap() error { return e.Err }

// Ciphertext is a sealed column value as stored in the database, or SQL
// NULL. It implements [driver.Valuer] and [sql.Scanner]. The zero value is
// NULL.
//
// A scanned value that does not parse as a ward ciphertext (in either
// form) is held as such, not as an error: Open refuses it with
// [ErrPlaintext], unless the column is migrating from plaintext
// ([AcceptPlaintext]). A value that parses must open or fail; it is never
// taken for plaintext.
type Ciphertext struct {
	data  []byte // binary form, or the raw stored value when plain
	valid bool
	text  bool  // store as text
	plain error // not nil: the stored value is not a ward ciphertext, and why
	raw   bool  // a plaintext to store as it is (mixed mode before fleetgate.Sealed opens)
	// remnant is, for a value that is not a ciphertext, the header its
	// first bytes still name if it starts like one (keycore.RemnantOf;
	// Version 0 when it does not): a column that knows the key calls it
	// damaged ([Column.Damaged]).
	remnant keycore.Remnant
}

// errPlainForm is why a value a column writes as plaintext (before the
// fleet reads ciphertexts: WithForms) is not a ciphertext.
var errPlainForm = errors.New("field: written as plaintext until every process reads ciphertexts")

// plainForm returns plaintext to be written as it is, unless it would read
// back as a ciphertext (or a newer release's).
func (c *Column) plainForm(plaintext []byte) (Ciphertext, error) {
	var probe Ciphertext
	if c.enc == Text {
		probe.Scan(string(plaintext))
	} else {
		probe.Scan(plaintext)
	}
	if probe.plain == nil || probe.Newer() {
		return Ciphertext{}, fmt.Errorf("field: %s.%s: the value reads as a ward ciphertext, and cannot be written as plaintext: %w", c.table, c.name, fleetgate.ErrNotOpen)
	}
	return Ciphertext{data: bytes.Clone(plaintext), valid: true, text: c.enc == Text, plain: errPlainForm, raw: true}, nil
}

// Newer reports whether a scanned value is a ward ciphertext in a version
// this release does not know ("w4:…", or a binary value whose first byte,
// below 0x20, names no known version): a newer release's value, which a
// column in mixed mode refuses rather than show as plaintext, and which no
// job takes for plaintext.
func (c Ciphertext) Newer() bool {
	var v *keyring.VersionError
	return c.plain != nil && errors.As(c.plain, &v) && len(c.data) > 0 && (c.text || c.data[0] < 0x20)
}

// IsPlaintext reports whether c is a value a column in mixed mode writes
// as plaintext ([WithForms]) or a scanned value that is not a ciphertext.
func (c Ciphertext) IsPlaintext() bool { return c.valid && c.plain != nil }

var (
	_ driver.Valuer = Ciphertext{}
	_ sql.Scanner   = (*Ciphertext)(nil)
)

// Valid reports whether the value is not NULL.
func (c Ciphertext) Valid() bool { return c.valid }

// Bytes returns the binary form (nil for NULL or a value that is not a
// ward ciphertext). The caller must not modify it.
func (c Ciphertext) Bytes() []byte {
	if c.plain != nil {
		return nil
	}
	return c.data
}

// Err returns, for a scanned value that is not a ward ciphertext, an error
// that matches [ErrPlaintext] and says why; nil for a ciphertext or NULL.
func (c Ciphertext) Err() error {
	if c.plain != nil {
		return &plaintextError{c.plain}
	}
	return nil
}

// IsText reports whether the value is stored in the text form.
func (c Ciphertext) IsText() bool { return c.text }

// AsText returns c to be stored in the text form ("w4:…"), as a TEXT
// column needs.
func (c Ciphertext) AsText() Ciphertext {
	c.text = true
	return c
}

// KeyID returns the ID of the key that sealed the value, from its header.
func (c Ciphertext) KeyID() (keyring.KeyID, error) {
	if !c.valid {
		return 0, ErrNull
	}
	if c.plain != nil {
		return 0, c.plain
	}
	return keycore.KeyIDOf(c.data)
}

// SubjectKeyVersion reports whether the value was sealed under a
// subject's own key (a column of [PerSubject]), and which version of it,
// from its header alone: what a census of one user's values needs. It
// authenticates nothing; only opening does.
func (c Ciphertext) SubjectKeyVersion() (version uint32, ok bool) {
	if !c.valid || c.plain != nil {
		return 0, false
	}
	return keycore.SubjectKeyVersion(c.data)
}

// Version returns the value's format version (its first byte): 0 for NULL
// or a value that is not a ward ciphertext. A version other than
// [keyring.CurrentVersion] was written by an older release.
func (c Ciphertext) Version() uint8 {
	if !c.valid || c.plain != nil || len(c.data) == 0 {
		return 0
	}
	return c.data[0]
}

// Value implements [driver.Valuer]: nil for NULL, []byte for the binary
// encoding, string for the text encoding. A scanned value that is not a
// ward ciphertext is never written back: Value returns [ErrPlaintext].
func (c Ciphertext) Value() (driver.Value, error) {
	if !c.valid {
		return nil, nil
	}
	if c.raw {
		if c.text {
			return string(c.data), nil
		}
		return c.data, nil
	}
	if c.plain != nil {
		return nil, &plaintextError{c.plain}
	}
	if c.text {
		return keyring.EncodeText(c.data), nil
	}
	return c.data, nil
}

// Scan implements [sql.Scanner]. It accepts NULL, the binary form (as
// []byte) and the text form (as string or []byte), and copies the data, as
// database/sql requires. Anything else that is a string or []byte is held
// as a value that is not a ciphertext (see [Ciphertext]).
func (c *Ciphertext) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c = Ciphertext{}
	case []byte:
		if keyring.IsText(v) {
			return c.Scan(string(v))
		}
		*c = Ciphertext{data: append([]byte(nil), v...), valid: true}
		if _, err := keycore.KeyIDOf(v); err != nil {
			c.plain = err
			c.remnant, _ = keycore.RemnantOf(c.data)
		}
	case string:
		*c = Ciphertext{valid: true, text: true}
		b, err := keyring.DecodeText(v)
		if err == nil {
			_, err = keycore.KeyIDOf(b)
		}
		if err != nil {
			c.data, c.plain = []byte(v), err
			c.remnant, _ = keycore.RemnantOf(c.data)
			return nil
		}
		c.data = b
	default:
		return fmt.Errorf("field: cannot scan %T into a Ciphertext", src)
	}
	return nil
}

// ErrPlaintext means a stored value is not a ward ciphertext: plaintext
// written before the column was encrypted, or damage that left nothing of
// a header this column knows ([ErrDamaged] is the rest). The error also
// matches the parse error ([keyring.ErrMalformed], [keyring.ErrTruncated]
// or a [*keyring.VersionError]).
var ErrPlaintext = errors.New("field: stored value is not a ward ciphertext")

// ErrDamaged means a stored value starts as a ward ciphertext of this
// column's keyring (its version, key class, algorithm and key ID survive)
// but does not parse: cut short by a column too narrow or a non-strict
// MySQL server, or otherwise damaged. It is never plaintext: every read
// path refuses it, mixed mode ([AcceptPlaintext]) included, and no job
// encrypts it ([Column.Damaged]). The error also matches the parse error.
var ErrDamaged = errors.New("field: stored value is a damaged ward ciphertext")

type damagedError struct{ parse error }

func (e *damagedError) Error() string        { return ErrDamaged.Error() + ": " + e.parse.Error() }
func (e *damagedError) Is(target error) bool { return target == ErrDamaged }
func (e *damagedError) Unwrap() error        { return e.parse }

// Damaged reports whether ct, a stored value that does not parse as a
// ward ciphertext, starts as one of this column's: a ciphertext's version
// and header whose key is in the column's keyring (for a column of
// [PerSubject], a subject key's). Opening it fails with [ErrDamaged]
// whatever the mode, and a census counts it as damaged, not plaintext.
// A plaintext that happens to start so is not told apart: key IDs are
// random 32-bit numbers, so one collides with a given keyring's about
// once in a billion values that also begin with a ciphertext's header.
func (c *Column) Damaged(ct Ciphertext) bool {
	if !ct.valid || ct.plain == nil || ct.remnant.Version == 0 {
		return false
	}
	if ct.remnant.Subject {
		return c.subjects != nil
	}
	if c.core == nil { // a grant's column: the keys it holds
		return c.scope != nil && c.scope.Holds(ct.remnant.KeyID)
	}
	_, ok := c.core.Lookup(ct.remnant.KeyID)
	return ok
}

type plaintextError struct{ parse error }

func (e *plaintextError) Error() string        { return ErrPlaintext.Error() + ": " + e.parse.Error() }
func (e *plaintextError) Is(target error) bool { return target == ErrPlaintext }
func (e *plaintextError) Unwrap() error        { return e.parse }

// ParseCiphertext wraps a stored value (binary or text form) as a
// Ciphertext without opening it.
func ParseCiphertext(b []byte) (Ciphertext, error) {
	var c Ciphertext
	if err := c.Scan(b); err != nil {
		return Ciphertext{}, err
	}
	if c.plain != nil {
		return Ciphertext{}, fmt.Errorf("field: %w", c.plain)
	}
	return c, nil
}
