package subject

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
)

// User-held keys. A private subject's keys are wrapped only under a key
// derived from a secret its user's log-in yields — the second half of a
// key-bearing password hash (password.Hasher.VerifyWithKey) — so that the
// database, the keyring file and the master key together open none of its
// values while the user is logged out. While the user is logged in, the
// unwrapped keys are stored sealed under a session key split between the
// session's token (which the server does not store) and the keyring, so
// any process of a fleet can open them for a request that carries the
// token, and none after the session ends. SECURITY.md states the bound.

// HKDF infos and domains of user-held keys.
const (
	userKEKInfo      = "ward subject user kek v1\x00"
	recoveryKEKInfo  = "ward subject recovery kek v1\x00"
	sessionKeyInfo   = "ward subject session key v1\x00"
	sessionIDDomain  = "ward subject session id v1\x00"
	sessionServerKey = "subject session v1"
	recoveryCodeLen  = 20 // bytes: 160 bits, 32 base32 characters
)

// ErrNoSession means a request carried no live session for a user-held
// subject: its values stay closed. It matches [field.ErrSubjectLocked].
var ErrNoSession = fmt.Errorf("%w (no live session)", field.ErrSubjectLocked)

// ErrWrongSecret means a user-held key did not unwrap under the secret
// given: another password's secret, or a recovery code that is wrong.
var ErrWrongSecret = errors.New("subject: the secret does not unwrap the subject's keys")

// kek derives a key-encryption key from a secret for the subject.
func (s *Store) kek(info string, subject string, secret []byte) (*keycore.SubjectKey, error) {
	if len(secret) < 16 {
		return nil, errors.New("subject: a key-encryption secret needs at least 16 bytes")
	}
	k, err := hkdf.Key(sha256.New, secret, nil, info+string(s.wrapContext(subject, 0)), 32)
	if err != nil {
		return nil, err
	}
	defer clear(k)
	return keycore.SubjectKeyFromSecret(keyring.AES256GCM, 1, k)
}

// Unlocked holds a subject's unwrapped keys, every version: what a log-in
// yields for a private subject, and what a session restores. Hold it for
// one request: a forget made by this process stops it at once, one made
// by another process stops the sessions it would be restored from. It implements
// [field.SubjectKeys] — for its own subject from the keys it holds, for
// every other subject through its store — so that
// column.WithKeys(unlocked) seals and opens the user's values during one
// request.
type Unlocked struct {
	store   *Store
	subject string
	keys    map[uint32]*keyring.SubjectKey
	newest  uint32
}

// Subject returns the subject the keys belong to.
func (u *Unlocked) Subject() string { return u.subject }

// SealingKey implements field.SubjectKeys.
func (u *Unlocked) SealingKey(subject string) (*keyring.SubjectKey, error) {
	if subject != u.subject || len(u.keys) == 0 {
		return u.store.SealingKey(subject)
	}
	if err := u.store.forgottenHere(subject); err != nil {
		return nil, err
	}
	return u.keys[u.newest], nil
}

// OpeningKey implements field.SubjectKeys.
func (u *Unlocked) OpeningKey(subject string, version uint32) (*keyring.SubjectKey, error) {
	if subject != u.subject {
		return u.store.OpeningKey(subject, version)
	}
	if err := u.store.forgottenHere(subject); err != nil {
		return nil, err
	}
	if k, ok := u.keys[version]; ok {
		return k, nil
	}
	// A version this user does not hold: lost in a reset, or missing.
	return u.store.OpeningKey(subject, version)
}

// Private reports whether the subject's keys are user-held: whether
// Unlock or Session found any.
func (u *Unlocked) Private() bool { return len(u.keys) > 0 }

// Destroy zeroes the keys' material. Use it when a request ends.
func (u *Unlocked) Destroy() {
	for _, k := range u.keys {
		k.Destroy()
	}
}

func (u *Unlocked) add(k *keyring.SubjectKey) {
	u.keys[k.Version()] = k
	u.newest = max(u.newest, k.Version())
}

// PrivateOptions are an operator's choices for [Store.MakePrivate].
type PrivateOptions struct {
	// Recovery also wraps the keys under a random recovery code, returned
	// once to be shown to the user: with it, a password reset keeps the
	// data. Without it, a reset loses every value sealed before it.
	Recovery bool
	// Tx, if set, is the caller's transaction — the one that stores the
	// user's new key-bearing password hash, so that the hash and the
	// private wrapping commit together or not at all (as ChangeSecret and
	// Reset do). MakePrivate then neither commits nor rolls it back.
	Tx *sql.Tx
}

// MakePrivate makes a subject's keys user-held: each is re-wrapped under a
// key derived from secret (and, if asked, a recovery code, returned) and
// its keyring-wrapped form is replaced in the same transaction; a subject
// without keys gets a first one, user-held. It returns the unlocked keys
// for the caller's session. Copies of the database taken before still hold
// the keyring-wrapped keys until the keyring key that wrapped them is
// retired (SECURITY.md).
func (s *Store) MakePrivate(ctx context.Context, subject string, secret []byte, opts PrivateOptions) (*Unlocked, string, error) {
	if err := checkSubject(subject); err != nil {
		return nil, "", err
	}
	kek, err := s.kek(userKEKInfo, subject, secret)
	if err != nil {
		return nil, "", err
	}
	var code string
	var rkek *keycore.SubjectKey
	if opts.Recovery {
		raw := make([]byte, recoveryCodeLen)
		rand.Read(raw)
		code = formatRecoveryCode(raw)
		if rkek, err = s.kek(recoveryKEKInfo, subject, raw); err != nil {
			return nil, "", err
		}
		clear(raw)
	}
	if err := s.checkNotForgotten(ctx, subject); err != nil {
		return nil, "", err
	}
	defer s.Purge(subject)
	if opts.Tx != nil {
		u, _, err := s.makePrivate(ctx, opts.Tx, subject, kek, rkek) // the anchor catches up at the ledger's next write
		return u, code, err
	}
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", fmt.Errorf("subject: making %s/%s private: %w", s.cfg.Namespace, subject, err)
	}
	defer tx.Rollback()
	u, anchor, err := s.makePrivate(ctx, tx, subject, kek, rkek)
	if err != nil {
		return nil, "", err
	}
	if err := sqltable.Commit(ctx, tx); err != nil {
		return nil, "", fmt.Errorf("subject: making %s/%s private: %w", s.cfg.Namespace, subject, err)
	}
	if err := saveAnchor(ctx, anchor); err != nil {
		return nil, "", fmt.Errorf("subject: %s/%s is private, but the keyring file's anchor was not updated: %w", s.cfg.Namespace, subject, err)
	}
	return u, code, nil
}

// makePrivate wraps every key of the subject under kek (and rkek) in tx,
// and returns what saves the ledger's new state in the keyring file's
// anchor after the commit (nil without a journal).
func (s *Store) makePrivate(ctx context.Context, tx *sql.Tx, subject string, kek, rkek *keycore.SubjectKey) (*Unlocked, func(context.Context) error, error) {
	if err := s.durable(ctx, tx); err != nil {
		return nil, nil, err
	}
	anchor, err := s.journalPrivate(ctx, tx, subject) // before the commit: never private in the database alone
	if err != nil {
		return nil, nil, err
	}
	u, err := s.wrapPrivate(ctx, tx, subject, kek, rkek)
	return u, anchor, err
}

// wrapPrivate is makePrivate's work on the subject's key rows.
func (s *Store) wrapPrivate(ctx context.Context, tx *sql.Tx, subject string, kek, rkek *keycore.SubjectKey) (*Unlocked, error) {
	rows, err := s.rowsOf(ctx, tx, subject)
	if err != nil {
		return nil, err
	}
	u := &Unlocked{store: s, subject: subject, keys: map[uint32]*keyring.SubjectKey{}}
	if len(rows) == 0 {
		if err := s.newPrivateKey(ctx, tx, u, kek, rkek); err != nil {
			return nil, err
		}
	}
	var newest int64
	keyringHeld := false
	for _, r := range rows {
		newest = max(newest, r.version)
		keyringHeld = keyringHeld || r.held == heldByKeyring
		if err := s.privateRow(ctx, tx, u, r, kek, rkek); err != nil {
			return nil, err
		}
	}
	if keyringHeld {
		// A fresh version for what is written from now on, never wrapped by
		// the keyring: a backup's keyring-wrapped copy of the older
		// versions opens nothing written after this.
		sk, err := s.freshUserKey(ctx, tx, subject, newest, kek, rkek)
		if err != nil {
			return nil, err
		}
		u.add(sk)
	}
	return u, nil
}

// newPrivateKey stores a first key for u's subject, wrapped only under
// kek (and rkek, for recovery).
func (s *Store) newPrivateKey(ctx context.Context, tx *sql.Tx, u *Unlocked, kek, rkek *keycore.SubjectKey) error {
	subject := u.subject
	version := randomVersion()
	sk, err := keyring.NewSubjectKey(s.cfg.Algorithm, version)
	if err != nil {
		return err
	}
	wc := s.wrapContext(subject, version)
	var rec []byte
	if rkek != nil {
		rec = wrapWith(rkek, sk, wc)
	}
	p := s.cfg.Dialect.Placeholder
	ins, skip := sqltable.IfAbsent(s.cfg.Dialect.String())
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`%s %s (namespace, subject, version, first, wrapped, created_at, held, recovery) VALUES (%s, %s, %s, 1, %s, %s, 1, %s)%s`,
		ins, s.keys, p(1), p(2), p(3), p(4), p(5), p(6), skip), s.cfg.Namespace, subject, int64(version), wrapWith(kek, sk, wc), time.Now().Unix(), rec)
	if err != nil {
		return fmt.Errorf("subject: storing the key of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("subject: %s/%s got a key meanwhile: try again", s.cfg.Namespace, subject)
	}
	u.add(sk)
	return nil
}

// privateRow re-wraps one key row of u's subject under kek (and rkek, or
// the row's recovery wrap as it is), by compare-and-swap.
func (s *Store) privateRow(ctx context.Context, tx *sql.Tx, u *Unlocked, r keyRowFull, kek, rkek *keycore.SubjectKey) error {
	var sk *keyring.SubjectKey
	var err error
	wc := s.wrapContext(r.subject, uint32(r.version))
	switch r.held {
	case heldByKeyring:
		if sk, err = s.cfg.Keyring.UnwrapSubjectKey(r.wrapped, wc); err != nil {
			return fmt.Errorf("subject: unwrapping the key of %s/%s version %d: %w", s.cfg.Namespace, u.subject, r.version, err)
		}
	case heldByUser:
		if sk, err = unwrapWith(kek, r.wrapped, wc); err != nil {
			return fmt.Errorf("%w: %s/%s version %d", ErrWrongSecret, s.cfg.Namespace, u.subject, r.version)
		}
	default:
		return nil // lost: nothing to wrap
	}
	rec := r.recovery
	if rkek != nil {
		rec = wrapWith(rkek, sk, wc)
	}
	if err := s.casRow(ctx, tx, r, wrapWith(kek, sk, wc), heldByUser, rec); err != nil {
		return err
	}
	u.add(sk)
	return nil
}

func randomVersion() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return (uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]))>>1 | 1
}

// rowsOf reads every key row of a subject, in version order, inside tx,
// locked for update (PostgreSQL; SQLite's write transaction serialises).
func (s *Store) rowsOf(ctx context.Context, tx *sql.Tx, subject string) ([]keyRowFull, error) {
	return s.readRows(ctx, tx, subject, true)
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) readRows(ctx context.Context, tx querier, subject string, forUpdate bool) ([]keyRowFull, error) {
	p := s.cfg.Dialect.Placeholder
	lock := ""
	if forUpdate && (s.cfg.Dialect == field.Postgres || s.cfg.Dialect == field.MySQL) {
		lock = " FOR UPDATE"
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT version, %s, held, %s FROM %s WHERE namespace = %s AND subject = %s ORDER BY version LIMIT %d%s`,
		wrappedCol.Value(), recoveryCol.Value(), s.keys, p(1), p(2), maxVersions+1, lock), s.cfg.Namespace, subject)
	if err != nil {
		return nil, fmt.Errorf("subject: reading the keys of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	defer rows.Close()
	var out []keyRowFull
	for rows.Next() {
		r := keyRowFull{keyRow: keyRow{subject: subject}}
		if err := rows.Scan(&r.version, &r.wrapped, &r.held, &r.recovery); err != nil {
			return nil, fmt.Errorf("subject: reading the keys of %s/%s: %w", s.cfg.Namespace, subject, err)
		}
		if r.version <= 0 || r.version > 1<<32-1 {
			return nil, fmt.Errorf("%w: %s/%s: key version %d out of range", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, r.version)
		}
		if out = append(out, r); len(out) > maxVersions {
			return nil, fmt.Errorf("%w: %s/%s has more than %d key versions", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject, maxVersions)
		}
	}
	return out, rows.Err()
}

type keyRowFull struct {
	keyRow
	recovery []byte
}

// casRow rewrites one key row if it still holds what was read.
func (s *Store) casRow(ctx context.Context, tx *sql.Tx, r keyRowFull, wrapped []byte, h held, recovery []byte) error {
	p := s.cfg.Dialect.Placeholder
	scoped := ""
	if h != heldByKeyring {
		scoped = ", scoped = NULL" // a key the keyring does not hold is never granted
	}
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET wrapped = %s, held = %s, recovery = %s%s WHERE namespace = %s AND subject = %s AND version = %s AND wrapped = %s AND held = %s`,
		s.keys, p(1), p(2), p(3), scoped, p(4), p(5), p(6), p(7), p(8)), wrapped, int16(h), recovery, s.cfg.Namespace, r.subject, r.version, r.wrapped, int16(r.held))
	if err != nil {
		return fmt.Errorf("subject: rewriting the key of %s/%s version %d: %w", s.cfg.Namespace, r.subject, r.version, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("subject: the key of %s/%s version %d changed meanwhile: try again", s.cfg.Namespace, r.subject, r.version)
	}
	return nil
}

// Unlock unwraps a private subject's keys with the secret its user's
// log-in yielded. A subject that is not private returns an Unlocked that
// holds nothing and defers to the store.
func (s *Store) Unlock(ctx context.Context, subject string, secret []byte) (*Unlocked, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	if err := s.checkNotForgotten(ctx, subject); err != nil {
		return nil, err
	}
	kek, err := s.kek(userKEKInfo, subject, secret)
	if err != nil {
		return nil, err
	}
	rows, err := s.readRows(ctx, s.cfg.DB, subject, false)
	if err != nil {
		return nil, err
	}
	u := &Unlocked{store: s, subject: subject, keys: map[uint32]*keyring.SubjectKey{}}
	for _, r := range rows {
		if r.held != heldByUser {
			continue
		}
		sk, err := unwrapWith(kek, r.wrapped, s.wrapContext(subject, uint32(r.version)))
		if err != nil {
			u.Destroy()
			return nil, fmt.Errorf("%w: %s/%s version %d", ErrWrongSecret, s.cfg.Namespace, subject, r.version)
		}
		u.add(sk)
	}
	return u, nil
}

type privateEntry struct {
	private bool
	expires time.Time
}

// isPrivate is Private through the cache: a request of a subject that is
// not private costs no query while the answer is fresh (at most the TTL;
// MakePrivate, Reset and Forget in this process refresh it at once).
// UserHeld reports whether the subject is private (its keys held by the
// user), as Private does, through the store's cache (within its TTL): a
// re-sealing job asks it of every value under an older key version.
func (s *Store) UserHeld(subject string) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.isPrivate(ctx, subject)
}

func (s *Store) isPrivate(ctx context.Context, subject string) (bool, error) {
	now := time.Now()
	s.mu.Lock()
	e, ok := s.private[subject]
	s.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.private, nil
	}
	p, err := s.Private(ctx, subject)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if len(s.private) >= s.cfg.MaxEntries {
		clear(s.private)
	}
	s.private[subject] = privateEntry{p, now.Add(s.cfg.TTL)}
	s.mu.Unlock()
	return p, nil
}

// Private reports whether a subject's keys are user-held.
func (s *Store) Private(ctx context.Context, subject string) (bool, error) {
	p := s.cfg.Dialect.Placeholder
	var n int
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE namespace = %s AND subject = %s AND held = 1`, s.keys, p(1), p(2)),
		s.cfg.Namespace, subject).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("subject: reading the keys of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	if n > 0 {
		return true, nil
	}
	// Rows a database writer deleted or put back do not make a subject
	// the journal records as private an ordinary one.
	return s.journaledPrivate(ctx, subject)
}

// HasRecovery reports whether a private subject's keys also have a
// recovery wrap.
func (s *Store) HasRecovery(ctx context.Context, subject string) (bool, error) {
	p := s.cfg.Dialect.Placeholder
	var n int
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE namespace = %s AND subject = %s AND held = 1 AND recovery IS NOT NULL`, s.keys, p(1), p(2)),
		s.cfg.Namespace, subject).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("subject: reading the keys of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return n > 0, nil
}

// ChangeSecret re-wraps a private subject's keys from the secret of the
// old password to that of the new one, inside the caller's transaction —
// the one that stores the new password hash, so that the hash and the
// wrapping never disagree. Use it for a password change and for a
// re-hash at log-in (new parameters or pepper give a new secret). A
// subject that is not private needs nothing.
func (s *Store) ChangeSecret(ctx context.Context, tx *sql.Tx, subject string, oldSecret, newSecret []byte) error {
	oldKEK, err := s.kek(userKEKInfo, subject, oldSecret)
	if err != nil {
		return err
	}
	newKEK, err := s.kek(userKEKInfo, subject, newSecret)
	if err != nil {
		return err
	}
	if tx != nil {
		if err := s.durable(ctx, tx); err != nil {
			return err
		}
	}
	rows, err := s.rowsOf(ctx, tx, subject)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.held != heldByUser {
			continue
		}
		wc := s.wrapContext(subject, uint32(r.version))
		sk, err := unwrapWith(oldKEK, r.wrapped, wc)
		if err != nil {
			return fmt.Errorf("%w: %s/%s version %d", ErrWrongSecret, s.cfg.Namespace, subject, r.version)
		}
		err = s.casRow(ctx, tx, r, wrapWith(newKEK, sk, wc), heldByUser, r.recovery)
		sk.Destroy()
		if err != nil {
			return err
		}
	}
	return nil
}

// Reset is a password reset of a private subject, inside the caller's
// transaction (the one that stores the new hash). With a recovery code
// (as MakePrivate returned it), every key is re-wrapped under the new
// secret and nothing is lost. Without one (code ""), the subject's
// user-held keys are marked lost — every value sealed under them then
// fails with [field.ErrSubjectKeyLost] — and a new user-held key is made
// for what the user writes next. It returns how many key versions were
// lost. A service says so to the user before it calls Reset without a
// code.
func (s *Store) Reset(ctx context.Context, tx *sql.Tx, subject, code string, newSecret []byte) (lost int, err error) {
	newKEK, err := s.kek(userKEKInfo, subject, newSecret)
	if err != nil {
		return 0, err
	}
	defer s.Purge(subject)
	if tx != nil {
		if err := s.durable(ctx, tx); err != nil {
			return 0, err
		}
	}
	rows, err := s.rowsOf(ctx, tx, subject)
	if err != nil {
		return 0, err
	}
	var rkek *keycore.SubjectKey
	if code != "" {
		raw, err := parseRecoveryCode(code)
		if err != nil {
			return 0, err
		}
		rkek, err = s.kek(recoveryKEKInfo, subject, raw)
		clear(raw)
		if err != nil {
			return 0, err
		}
	}
	var newest int64
	for _, r := range rows {
		newest = max(newest, r.version)
		if r.held != heldByUser {
			continue
		}
		wc := s.wrapContext(subject, uint32(r.version))
		if rkek == nil {
			if err := s.casRow(ctx, tx, r, r.wrapped, heldLost, nil); err != nil {
				return 0, err
			}
			lost++
			continue
		}
		if r.recovery == nil {
			return 0, fmt.Errorf("%w: %s/%s version %d has no recovery wrap", ErrWrongSecret, s.cfg.Namespace, subject, r.version)
		}
		sk, err := unwrapWith(rkek, r.recovery, wc)
		if err != nil {
			return 0, fmt.Errorf("%w: the recovery code does not open %s/%s", ErrWrongSecret, s.cfg.Namespace, subject)
		}
		err = s.casRow(ctx, tx, r, wrapWith(newKEK, sk, wc), heldByUser, r.recovery)
		sk.Destroy()
		if err != nil {
			return 0, err
		}
	}
	if rkek == nil {
		sk, err := s.freshUserKey(ctx, tx, subject, newest, newKEK, nil)
		if err != nil {
			return lost, err
		}
		sk.Destroy()
	}
	// Sessions opened under the old keys end with the reset.
	p := s.cfg.Dialect.Placeholder
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE namespace = %s AND subject = %s`, s.sessions, p(1), p(2)), s.cfg.Namespace, subject); err != nil {
		return lost, fmt.Errorf("subject: ending the sessions of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return lost, nil
}

// freshUserKey stores a new key version for a subject whose keys a reset
// without recovery lost, wrapped under the new secret's KEK.
func (s *Store) freshUserKey(ctx context.Context, tx *sql.Tx, subject string, newest int64, newKEK, rkek *keycore.SubjectKey) (*keyring.SubjectKey, error) {
	if newest >= 1<<32-1 {
		return nil, fmt.Errorf("subject: %s/%s has no key version left", s.cfg.Namespace, subject)
	}
	version := uint32(newest + 1)
	if newest == 0 {
		version = randomVersion()
	}
	sk, err := keyring.NewSubjectKey(s.cfg.Algorithm, version)
	if err != nil {
		return nil, err
	}
	wc := s.wrapContext(subject, version)
	var rec []byte
	if rkek != nil {
		rec = wrapWith(rkek, sk, wc)
	}
	p := s.cfg.Dialect.Placeholder
	first := any(nil)
	if newest == 0 {
		first = 1
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (namespace, subject, version, first, wrapped, created_at, held, recovery) VALUES (%s, %s, %s, %s, %s, %s, 1, %s)`,
		s.keys, p(1), p(2), p(3), p(4), p(5), p(6), p(7)), s.cfg.Namespace, subject, int64(version), first,
		wrapWith(newKEK, sk, wc), time.Now().Unix(), rec); err != nil {
		sk.Destroy()
		return nil, fmt.Errorf("subject: storing the new key of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return sk, nil
}

var recoveryEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// formatRecoveryCode writes a code as 8 groups of 4 base32 characters.
func formatRecoveryCode(raw []byte) string {
	s := recoveryEncoding.EncodeToString(raw)
	var b strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(s[i:min(i+4, len(s))])
	}
	return b.String()
}

// parseRecoveryCode accepts a code with or without dashes and spaces, in
// either case.
func parseRecoveryCode(code string) ([]byte, error) {
	if len(code) > 128 {
		return nil, fmt.Errorf("%w: not a recovery code", ErrWrongSecret)
	}
	clean := strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(code))
	raw, err := recoveryEncoding.DecodeString(clean)
	if err != nil || len(raw) != recoveryCodeLen || len(clean) != recoveryEncoding.EncodedLen(recoveryCodeLen) {
		return nil, fmt.Errorf("%w: not a recovery code", ErrWrongSecret)
	}
	return raw, nil
}

// sessionID names a session's rows without revealing its token.
func sessionID(token []byte) string {
	sum := sha256.Sum256(append([]byte(sessionIDDomain), token...))
	return hex.EncodeToString(sum[:16])
}

// sessionKey is the key a session's copies of the subject's keys are
// sealed under: HKDF of the session's token with a keyring-derived server
// secret as salt. Neither half alone opens them: not the token (a stolen
// cookie without the keyring), not the server (which never stores the
// token, only sessionID's hash of it).
func (s *Store) sessionKey(subject string, token []byte) (*keycore.SubjectKey, error) {
	if len(token) < 16 {
		return nil, errors.New("subject: a session token needs at least 16 bytes")
	}
	server, err := s.cfg.Keyring.Derive(sessionServerKey, 32)
	if err != nil {
		return nil, err
	}
	defer clear(server)
	k, err := hkdf.Key(sha256.New, token, server, sessionKeyInfo+string(s.wrapContext(subject, 0)), 32)
	if err != nil {
		return nil, err
	}
	defer clear(k)
	return keycore.SubjectKeyFromSecret(keyring.AES256GCM, 1, k)
}

// StartSession stores u's keys sealed under the session key of token
// until expires, so that any process can restore them for a request that
// carries the token ([Store.Session]). Nothing is stored for a subject
// that is not private.
func (s *Store) StartSession(ctx context.Context, u *Unlocked, token []byte, expires time.Time) error {
	if len(u.keys) == 0 {
		return nil
	}
	sk, err := s.sessionKey(u.subject, token)
	if err != nil {
		return err
	}
	defer sk.Destroy()
	id := sessionID(token)
	// One key (the common case) is one statement; more go in one
	// transaction.
	var q querier = s.cfg.DB
	var tx *sql.Tx
	if len(u.keys) > 1 {
		if tx, err = s.cfg.DB.BeginTx(ctx, nil); err != nil {
			return fmt.Errorf("subject: starting a session: %w", err)
		}
		defer tx.Rollback()
		q = tx
	}
	p := s.cfg.Dialect.Placeholder
	upsert := `ON CONFLICT (namespace, session, version) DO UPDATE SET wrapped = excluded.wrapped, expires_at = excluded.expires_at, subject = excluded.subject`
	if s.cfg.Dialect == field.MySQL {
		upsert = `ON DUPLICATE KEY UPDATE wrapped = VALUES(wrapped), expires_at = VALUES(expires_at), subject = VALUES(subject)`
	}
	for _, v := range slices.Sorted(maps.Keys(u.keys)) {
		k := u.keys[v]
		w := wrapWith(sk, k, append([]byte(id), s.wrapContext(u.subject, v)...))
		if _, err := q.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (namespace, session, subject, version, wrapped, expires_at) VALUES (%s, %s, %s, %s, %s, %s) %s`,
			s.sessions, p(1), p(2), p(3), p(4), p(5), p(6), upsert), s.cfg.Namespace, id, u.subject, int64(v), w, expires.Unix()); err != nil {
			return fmt.Errorf("subject: starting a session: %w", err)
		}
	}
	if tx != nil {
		return sqltable.Commit(ctx, tx)
	}
	return nil
}

// Session restores a private subject's keys for a request that carries
// its session's token. It returns an error matching [ErrNoSession] (and
// [field.ErrSubjectLocked]) when no live session of that subject matches
// the token, and an Unlocked that defers to the store for a subject that
// is not private — known from a cache, so that such a request costs no
// query (a subject made private by another process is known as such
// within the TTL; until then this process may still open its values with
// a key it unwrapped before, as it could before, and no longer after).
func (s *Store) Session(ctx context.Context, subject string, token []byte) (*Unlocked, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	if err := s.forgottenHere(subject); err != nil {
		return nil, err
	}
	u := &Unlocked{store: s, subject: subject, keys: map[uint32]*keyring.SubjectKey{}}
	private, err := s.isPrivate(ctx, subject)
	if err != nil || !private {
		return u, err
	}
	if err := s.checkNotForgotten(ctx, subject); err != nil {
		return nil, err
	}
	if len(token) == 0 {
		return nil, ErrNoSession
	}
	sk, err := s.sessionKey(subject, token)
	if err != nil {
		return nil, err
	}
	defer sk.Destroy()
	id := sessionID(token)
	p := s.cfg.Dialect.Placeholder
	rows, err := s.cfg.DB.QueryContext(ctx, fmt.Sprintf(`SELECT version, %s FROM %s WHERE namespace = %s AND session = %s AND subject = %s AND expires_at > %s LIMIT %d`,
		wrappedCol.Value(), s.sessions, p(1), p(2), p(3), p(4), maxVersions), s.cfg.Namespace, id, subject, time.Now().Unix())
	if err != nil {
		return nil, fmt.Errorf("subject: reading the session of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		var w []byte
		if err := rows.Scan(&v, &w); err != nil {
			return nil, err
		}
		if v <= 0 || v > 1<<32-1 {
			continue
		}
		k, err := unwrapWith(sk, w, append([]byte(id), s.wrapContext(subject, uint32(v))...))
		if err != nil {
			u.Destroy()
			return nil, fmt.Errorf("%w: a session copy does not open: %v", ErrNoSession, err)
		}
		u.add(k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(u.keys) == 0 {
		return nil, ErrNoSession
	}
	return u, nil
}

// EndSession deletes a session's copies of the keys: from then on no
// process can open the subject's values for it.
func (s *Store) EndSession(ctx context.Context, token []byte) error {
	p := s.cfg.Dialect.Placeholder
	_, err := s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE namespace = %s AND session = %s`, s.sessions, p(1), p(2)), s.cfg.Namespace, sessionID(token))
	if err != nil {
		return fmt.Errorf("subject: ending a session: %w", err)
	}
	return nil
}

// PurgeSessions deletes expired session copies; run it now and then.
func (s *Store) PurgeSessions(ctx context.Context) (int64, error) {
	p := s.cfg.Dialect.Placeholder
	res, err := s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE namespace = %s AND expires_at <= %s`, s.sessions, p(1), p(2)), s.cfg.Namespace, time.Now().Unix())
	if err != nil {
		return 0, fmt.Errorf("subject: purging sessions: %w", err)
	}
	return res.RowsAffected()
}

// wrapWith seals sk under a key-encryption key of the user's (derived from
// their password, recovery code or session token), bound to ad.
func wrapWith(kek *keycore.SubjectKey, sk *keyring.SubjectKey, ad []byte) []byte {
	return keycore.WrapSubjectKeyWith(kek, (*keycore.SubjectKey)(sk), ad)
}

// unwrapWith opens a subject key wrapped by wrapWith under the same kek
// and ad.
func unwrapWith(kek *keycore.SubjectKey, wrapped, ad []byte) (*keyring.SubjectKey, error) {
	sk, err := keycore.UnwrapSubjectKeyWith(kek, wrapped, ad)
	if err != nil {
		return nil, err
	}
	return (*keyring.SubjectKey)(sk), nil
}
