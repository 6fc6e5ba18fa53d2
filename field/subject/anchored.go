package subject

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/ledger"
)

// Private mode, anchored outside the database.
//
// Whether a subject is private shows in the database (its keys' held
// column), which a database writer can change: delete a private user's
// key and session rows, and the store would create a fresh
// keyring-wrapped key at the user's next write, readable by whoever holds
// the keyring. With a journal (Config.Journal), going private is also
// recorded there (a keyed hash of the subject, MAC'd), and the store asks
// it before it creates or uses a keyring-wrapped key: a subject the
// journal records as private never gets one again, whatever its rows say.

// ErrPrivateKeysChanged means the journal records the subject as private
// but the database holds no user-held key for it (deleted, or put back
// from before it went private): the store refuses to seal under a
// keyring-wrapped key. It matches [field.ErrSubjectLocked].
var ErrPrivateKeysChanged = fmt.Errorf("%w (the journal records the subject as private, but its keys in the database are missing or keyring-wrapped: a database writer changed them)", field.ErrSubjectLocked)

// journaledPrivate reports whether the journal records the subject as
// private; false without a journal or a ledger naming the database.
func (s *Store) journaledPrivate(ctx context.Context, subject string) (bool, error) {
	if s.cfg.Journal == nil || s.cfg.Ledger == nil {
		return false, nil
	}
	db, err := s.databaseID(ctx)
	if err != nil || db == "" {
		return false, err
	}
	p, err := s.cfg.Journal.Private(db, s.cfg.Namespace, subject, func() (forgetlog.Commitment, error) {
		if st := s.cfg.Verified; st != nil {
			return s.commitment(st), nil
		}
		st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
		if err != nil {
			return forgetlog.Commitment{}, err
		}
		return s.commitment(st), nil
	})
	if err != nil {
		return false, fmt.Errorf("subject: reading the journal: %w", err)
	}
	return p, nil
}

// commitment is what the ledger's state commits to of the namespace's
// subjects gone private.
func (s *Store) commitment(st *ledger.State) forgetlog.Commitment {
	if st == nil {
		return forgetlog.Commitment{V1: true}
	}
	return forgetlog.Commitment{Tally: st.Tally(PrivateCounter(s.cfg.Namespace)), V1: !slices.Contains(st.Marks, PrivateV2Mark(s.cfg.Namespace))}
}

// databaseID is the ledger's database ID, read from a verified ledger
// once per Store (it never changes; "" while the database has no ledger).
func (s *Store) databaseID(ctx context.Context) (string, error) {
	if v := s.cfg.Verified; v != nil {
		return v.Database, nil
	}
	if s.cfg.Ledger == nil {
		return "", nil
	}
	s.mu.Lock()
	db := s.dbID
	s.mu.Unlock()
	if db != "" {
		return db, nil
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err != nil || st == nil {
		return "", err
	}
	s.mu.Lock()
	s.dbID = st.Database
	s.mu.Unlock()
	return st.Database, nil
}

// refuseKeyringKey refuses a keyring-wrapped key for a subject the
// journal records as private.
func (s *Store) refuseKeyringKey(ctx context.Context, subject string) error {
	p, err := s.journaledPrivate(ctx, subject)
	if err != nil {
		return err
	}
	if p {
		return fmt.Errorf("subject: %s/%s: %w", s.cfg.Namespace, subject, ErrPrivateKeysChanged)
	}
	return nil
}

// privateCounterPrefix names the ledger's counters (and tallies) of
// subjects gone private, one per namespace.
const privateCounterPrefix = "subject.private:"

// PrivateCounter names the ledger counter, and its tally
// ([ledger.State.Tallies]), of a namespace's subjects gone private with a
// journal: each journal record of one (ward-private-v2) chains from it,
// so a record counts once the ledger commits to it, whatever keyring
// file MAC'd it (package forgetlog).
func PrivateCounter(namespace string) string { return privateCounterPrefix + namespace }

// PrivateV2Mark is the ledger mark saying a namespace's private records
// from before tallies (ward-private-v1, MAC'd under a key every copy of
// the keyring file derives) were counted on its chain: from then on they
// count for nothing. [Open] moves them, with a journal.
func PrivateV2Mark(namespace string) string { return "integrity:private-v2:" + namespace }

// journalPrivate records, before tx commits, that the subject goes
// private: counted in the ledger's tally of the namespace's private
// subjects in tx, and journaled with the tally it chains from. Call the
// anchor it returns after the commit.
func (s *Store) journalPrivate(ctx context.Context, tx *sql.Tx, subject string) (anchor func(context.Context) error, err error) {
	if s.cfg.Journal == nil {
		return nil, nil
	}
	if s.cfg.Ledger == nil {
		return nil, errors.New("subject: a Journal needs Config.Ledger (its database ID names the records)")
	}
	st, err := s.readyLedger(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.chainV1Private(ctx, tx, st); err != nil {
		return nil, err
	}
	id, err := s.identity(subject)
	if err != nil {
		return nil, err
	}
	prev, anchor, err := s.cfg.Ledger.TallyTx(ctx, tx, s.cfg.Keyring, PrivateCounter(s.cfg.Namespace), forgetlog.PrivateItem(id))
	if err != nil {
		return nil, fmt.Errorf("subject: counting %s/%s as private: %w", s.cfg.Namespace, subject, err)
	}
	e := forgetlog.Entry{Database: st.Database, Namespace: s.cfg.Namespace, Subject: subject, Private: true, Chain: true, Prev: prev}
	if err := s.cfg.Journal.Append(ctx, e); err != nil {
		return nil, fmt.Errorf("subject: %s/%s is not private: %w", s.cfg.Namespace, subject, err)
	}
	return anchor, nil
}

// chainV1Private moves, in tx, the namespace's v1 private records onto
// its chain — each subject counted in the ledger's tally and journaled
// again as ward-private-v2 — and marks the move (PrivateV2Mark), unless
// marked already. A kill before the commit leaves the v1 records counting
// and the next run does it again (records of a rolled-back move are off
// the chain: they count only while their epoch is current, for subjects
// the v1 records made private anyway).
func (s *Store) chainV1Private(ctx context.Context, tx *sql.Tx, st *ledger.State) (anchor func(context.Context) error, err error) {
	ns := s.cfg.Namespace
	if slices.Contains(st.Marks, PrivateV2Mark(ns)) {
		return nil, nil
	}
	ids, err := s.cfg.Journal.Unchained(st.Database, ns, s.commitment(st))
	if err != nil {
		return nil, fmt.Errorf("subject: reading the journal: %w", err)
	}
	items := make([][]byte, len(ids))
	for i, id := range ids {
		items[i] = forgetlog.PrivateItem(id)
	}
	prevs, anchor, err := s.cfg.Ledger.TallyEachTx(ctx, tx, s.cfg.Keyring, PrivateCounter(ns), items, PrivateV2Mark(ns))
	if err != nil {
		return nil, fmt.Errorf("subject: counting the private subjects of %s: %w", ns, err)
	}
	for i, id := range ids {
		if err := s.cfg.Journal.Append(ctx, forgetlog.Entry{Database: st.Database, Namespace: ns, Identity: id, Private: true, Chain: true, Prev: prevs[i]}); err != nil {
			return nil, fmt.Errorf("subject: moving the private records of %s: %w", ns, err)
		}
	}
	return anchor, nil
}

// chainV1PrivateAtOpen is chainV1Private in a transaction of its own, at
// Open with a journal, for a database whose ledger exists (a ledger that
// does not verify is left to the paths that verify it, which report it).
func (s *Store) chainV1PrivateAtOpen(ctx context.Context) error {
	if s.cfg.Journal == nil || s.cfg.Ledger == nil || s.cfg.Verified != nil {
		return nil
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err != nil || st == nil || slices.Contains(st.Marks, PrivateV2Mark(s.cfg.Namespace)) {
		return nil
	}
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("subject: moving the private records of %s: %w", s.cfg.Namespace, err)
	}
	defer tx.Rollback()
	if err := s.durable(ctx, tx); err != nil {
		return err
	}
	anchor, err := s.chainV1Private(ctx, tx, st)
	if err != nil {
		return err
	}
	if err := sqltable.Commit(ctx, tx); err != nil {
		return fmt.Errorf("subject: moving the private records of %s: %w", s.cfg.Namespace, err)
	}
	if err := saveAnchor(ctx, anchor); err != nil {
		return fmt.Errorf("subject: the private records of %s moved, but the keyring file's anchor was not updated: %w", s.cfg.Namespace, err)
	}
	return nil
}

// saveAnchor calls, after a commit, the anchor a ledger write in the
// transaction returned (nil: nothing to save). A keyring file this process
// cannot write (ledger.ErrAnchorNotSaved) leaves the anchor behind, which
// is no error: the ledger's next write by a process that can brings it up
// to date.
func saveAnchor(ctx context.Context, anchor func(context.Context) error) error {
	if anchor == nil {
		return nil
	}
	if err := anchor(ctx); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return err
	}
	return nil
}
