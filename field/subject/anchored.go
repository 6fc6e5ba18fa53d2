package subject

import (
	"context"
	"errors"
	"fmt"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/journal"
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
	p, err := s.cfg.Journal.Private(db, s.cfg.Namespace, subject)
	if err != nil {
		return false, fmt.Errorf("subject: reading the journal: %w", err)
	}
	return p, nil
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

// journalPrivate records, before the caller's transaction commits, that
// the subject goes private.
func (s *Store) journalPrivate(ctx context.Context, subject string) error {
	if s.cfg.Journal == nil {
		return nil
	}
	if s.cfg.Ledger == nil {
		return errors.New("subject: a Journal needs Config.Ledger (its database ID names the records)")
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err == nil && st == nil {
		if err = s.cfg.Ledger.Record(ctx, s.cfg.Keyring); err == nil {
			st, err = s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
		}
	}
	if err != nil {
		return err
	}
	if err := s.cfg.Journal.Append(ctx, journal.Entry{Database: st.Database, Namespace: s.cfg.Namespace, Subject: subject, Private: true}); err != nil {
		return fmt.Errorf("subject: %s/%s is not private: %w", s.cfg.Namespace, subject, err)
	}
	return nil
}
