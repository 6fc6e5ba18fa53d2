package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// columns are the encrypted columns, blind index and row MACs of the
// schema, with the bindings that decide who may read each value:
//
//	users.email           row (id)
//	users.password        row MAC over (id, password)
//	sessions              row MAC over (token_hash, user_id, expires)
//	conversations.title   row and user_id, under the user's own key
//	messages.body         row, conversation_id, user_id and role, under the user's own key
//
// Titles and bodies are sealed per user (field.PerSubject, subject
// "users"/user_id): deleting an account forgets the user's key, and a
// user in private mode holds that key through their password.
type columns struct {
	email, title, body                 *field.Column
	signupEmail, outboxTo, outboxBody  *field.Column
	passwordMAC, sessionMAC, signupMAC *field.RowMAC
	resetMAC, accessMAC                *field.RowMAC
}

func newColumns(kr *keyring.Keyring, migrating bool, subjects field.SubjectKeys, gate *fleetgate.Gate) (*columns, error) {
	c := &columns{}
	var err error
	perUser := field.PerSubject(subjects, "user_id")
	gated := field.WithForms(gate) // v4 once every registered process reads it
	// The service refuses values in earlier ciphertext versions and
	// bindings for good: it runs only on a migrated database. Migrate
	// alone reads them, to re-seal them.
	plain, bound := []field.ColumnOption{gated, field.RefuseLegacyForms()}, []field.ColumnOption{gated, field.RefuseLegacyForms()}
	if migrating {
		plain, bound = []field.ColumnOption{gated}, []field.ColumnOption{gated, field.AcceptLegacyBinding()}
	}
	if c.email, err = field.NewColumn(kr, "users", "email", plain...); err != nil {
		return nil, err
	}
	if c.title, err = field.NewColumn(kr, "conversations", "title", append([]field.ColumnOption{field.Bind("user_id"), perUser}, bound...)...); err != nil {
		return nil, err
	}
	if c.body, err = field.NewColumn(kr, "messages", "body", append([]field.ColumnOption{field.Bind("conversation_id", "user_id", "role"), perUser}, bound...)...); err != nil {
		return nil, err
	}
	// Pending sign-ups and the outbox came after every legacy form.
	strict := field.RefuseLegacyForms()
	if c.signupEmail, err = field.NewColumn(kr, "signups", "email", strict, gated); err != nil {
		return nil, err
	}
	if c.outboxTo, err = field.NewColumn(kr, "outbox", "recipient", strict, gated); err != nil {
		return nil, err
	}
	if c.outboxBody, err = field.NewColumn(kr, "outbox", "body", strict, gated); err != nil {
		return nil, err
	}
	return c, nil
}

// emailIndex is the users' blind index of their addresses (case folded),
// in two columns so that a rotation re-keys it to the new integrity epoch
// with the service running (ledger.Indexer, lifecycle.Reindex): a copy
// of the keyring file from before then tests no guess against it.
var emailIndex = ledger.IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}

// openEmailIndex gives the store the users' blind index, as the ledger
// records it. A database the ledger records no index for yet holds the
// values of the releases before (v1, the keyring root's) or none: it is
// recorded as v1, which every process of the fleet computes, and the next
// rotation moves it to v2 once each of them follows (Rotate). Init
// records a new database's as v2 at once.
func (s *store) openEmailIndex(ctx context.Context, lg *ledger.Ledger, kr *keyring.Keyring, gate *fleetgate.Gate) error {
	x, err := lg.Indexer(ctx, kr, emailIndex, field.Fold, ledger.IndexerOptions{Gate: gate, FromV1: true})
	if err != nil {
		return fmt.Errorf("chat: the blind index of users.email: %w", err)
	}
	s.emails = x
	return nil
}

// The row MACs the service keeps: each column and what it covers, recorded
// in the ledger so that a rotation moves them to each new integrity epoch.
var (
	passwordMACs = ledger.MACColumn{Table: "users", Column: "password_mac", Key: "id", Covers: []string{"id", "password"}}
	sessionMACs  = ledger.MACColumn{Table: "sessions", Column: "mac", Key: "token_hash", Covers: []string{"token_hash", "user_id", "expires"}}
	signupMACs   = ledger.MACColumn{Table: "signups", Column: "mac", Key: "token_hash", Covers: []string{"token_hash", "email_idx", "password", "expires"}}
	resetMACs    = ledger.MACColumn{Table: "resets", Column: "mac", Key: "token_hash", Covers: []string{"token_hash", "user_id", "expires"}}
)

// rowMACs gives c its row MACs, bound to the database lg verifies and
// rotating with the keyring (ledger.Ledger.RowMAC).
func (c *columns) rowMACs(ctx context.Context, lg *ledger.Ledger, kr *keyring.Keyring, gate *fleetgate.Gate) error {
	for _, m := range []struct {
		to  **field.RowMAC
		col ledger.MACColumn
	}{{&c.passwordMAC, passwordMACs}, {&c.sessionMAC, sessionMACs}, {&c.signupMAC, signupMACs}, {&c.resetMAC, resetMACs}, {&c.accessMAC, accessMACs}} {
		mac, err := lg.RowMAC(ctx, kr, m.col, gate)
		if err != nil {
			return fmt.Errorf("chat: the row MAC of %s: %w", m.col.Table, err)
		}
		*m.to = mac
	}
	return nil
}

// store holds users, sessions, conversations and messages.
type store struct {
	db       *sql.DB
	dialect  field.Dialect
	cols     *columns
	subjects *subject.Store
	emails   *ledger.Indexer // the users' blind index of their addresses
	access   *accessLog      // who else read a user's messages
}

// with returns the store as one request sees it: titles and bodies open
// and seal with the request's user keys (a private user's, restored from
// their session), every other value as usual.
func (s *store) with(keys *subject.Unlocked) *store {
	if keys == nil {
		return s
	}
	cp, cols := *s, *s.cols
	cols.title, cols.body = cols.title.WithKeys(keys), cols.body.WithKeys(keys)
	cp.cols = &cols
	return &cp
}

// subjectOf is a user's subject ID in the "users" namespace.
func subjectOf(user int64) string { return strconv.FormatInt(user, 10) }

// errNotFound is returned for rows that do not exist or belong to someone
// else; the API answers both the same way.
var errNotFound = errors.New("chat: not found")

// errExists is returned when an e-mail address is taken.
var errExists = errors.New("chat: account exists")

// errTampered is returned when a row MAC does not match.
var errTampered = errors.New("chat: a row was altered in the database")

func newStore(db *sql.DB, dialect field.Dialect, kr *keyring.Keyring, subjects *subject.Store, gate *fleetgate.Gate) (*store, error) {
	cols, err := newColumns(kr, false, subjects, gate)
	if err != nil {
		return nil, err
	}
	return &store{db: db, dialect: dialect, cols: cols, subjects: subjects}, nil
}

// q rewrites ? placeholders for the database.
func (s *store) q(query string) string { return s.dialect.Rebind(query) }

// asText is the type a user ID is cast to when compared with a subject:
// TEXT, or BINARY on MySQL (compared as bytes, as the subject is stored).
func (s *store) asText() string {
	if s.dialect == field.MySQL {
		return "BINARY"
	}
	return "TEXT"
}

// newID returns a random positive 63-bit ID: no count of rows leaks, and
// IDs are not guessable.
func newID() int64 {
	for {
		var b [8]byte
		rand.Read(b[:])
		if v := int64(binary.BigEndian.Uint64(b[:]) >> 1); v != 0 {
			return v
		}
	}
}

// seal seals text with col for row.
func (s *store) seal(col *field.Column, row field.RowKey, text string) (any, error) {
	ct, err := col.SealString(row, text)
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// open opens a stored ciphertext with col for row.
func (s *store) open(col *field.Column, row field.RowKey, raw []byte) (string, error) {
	ct, err := field.ParseCiphertext(raw)
	if err != nil {
		return "", err
	}
	return col.OpenString(row, ct)
}

// emailKey is the blind index of an address in its current column: the
// log-in limiter counts attempts per index, so look-alike spellings count
// as one account.
func (s *store) emailKey(email string) []byte {
	a, b := s.emails.Lookup(email)
	if s.emails.Record().Slot == 1 {
		return b
	}
	return a
}

// byEmail is the condition that finds the account of an address, in
// either column of its blind index; emailArgs are its arguments.
const byEmail = `(email_idx = ? OR email_idx2 = ?)`

func (s *store) emailArgs(email string) []any {
	a, b := s.emails.Lookup(email)
	return []any{a, b}
}

func (s *store) createUser(ctx context.Context, email, passwordHash string) (int64, error) {
	id := newID()
	enc, err := s.seal(s.cols.email, field.RowInt(id), email)
	if err != nil {
		return 0, err
	}
	mac, err := s.cols.passwordMAC.Sum(id, passwordHash)
	if err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// The index's values for this write, read in its transaction: a
	// re-key moves on only once the write commits (ledger.Indexer.WriteTx).
	a, b, err := s.emails.WriteTx(ctx, tx, email)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO users (id, email, email_idx, email_idx2, password, password_mac, created) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		id, enc, a, b, passwordHash, mac, time.Now().Unix())
	if field.Duplicate(err) {
		return 0, errExists
	}
	if err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// userByEmail finds an account by its blind index and checks its password
// hash's row MAC: a hash copied from another account is refused.
func (s *store) userByEmail(ctx context.Context, email string) (id int64, hash string, err error) {
	var mac []byte
	err = s.db.QueryRowContext(ctx, s.q(`SELECT id, password, password_mac FROM users WHERE `+byEmail), s.emailArgs(email)...).Scan(&id, &hash, &mac)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", errNotFound
	}
	if err != nil {
		return 0, "", err
	}
	if err := s.cols.passwordMAC.Verify(mac, id, hash); err != nil {
		return 0, "", fmt.Errorf("%w: password hash of user %d: %v", errTampered, id, err)
	}
	return id, hash, nil
}

// updatePassword replaces a hash only if it is still the old one
// (compare-and-swap, for upgrade on log-in).
func (s *store) updatePassword(ctx context.Context, id int64, old, new string) error {
	mac, err := s.cols.passwordMAC.Sum(id, new)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.q(`UPDATE users SET password = ?, password_mac = ? WHERE id = ? AND password = ?`), new, mac, id, old)
	return err
}

func tokenHash(token string) []byte { h := sha256.Sum256([]byte(token)); return h[:] }

func (s *store) createSession(ctx context.Context, token string, user int64, ttl time.Duration) error {
	th, exp := tokenHash(token), time.Now().Add(ttl).Unix()
	mac, err := s.cols.sessionMAC.Sum(th, user, exp)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, user_id, expires, mac) VALUES (?, ?, ?, ?)`), th, user, exp, mac)
	return err
}

// sessionUser returns the user of a live session whose row MAC matches: a
// session row re-pointed to another user is refused.
func (s *store) sessionUser(ctx context.Context, token string) (int64, error) {
	th := tokenHash(token)
	var user, exp int64
	var mac []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT user_id, expires, mac FROM sessions WHERE token_hash = ?`), th).Scan(&user, &exp, &mac)
	if err != nil || exp < time.Now().Unix() {
		return 0, errNotFound
	}
	if s.cols.sessionMAC.Verify(mac, th, user, exp) != nil {
		return 0, errTampered
	}
	return user, nil
}

func (s *store) deleteSession(ctx context.Context, token string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), tokenHash(token))
	return err
}

func (s *store) sweepSessions(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE expires < ?`), now.Unix())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
