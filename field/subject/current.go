package subject

import (
	"context"
	"fmt"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
)

// A database that went back in time (a failover to a standby that missed
// the last commits, a restore from backup, a database writer's rollback)
// holds the keys of subjects forgotten in the commits it lost, and no
// tombstones for them: their values would open again. Two checks keep a
// store from handing out such a key, for opening as for sealing:
//
//   - the database's ledger is verified against the keyring file's anchor
//     (ledger.ErrReplayed when it is older) before a key is read from the
//     database, at most once per TTL, so that a store on a rolled-back
//     database opens nothing until 'ward ledger recover' has forgotten
//     those subjects again; it needs Config.Ledger;
//   - every read of a key row asks, in the same statement, whether the
//     server is a standby (PostgreSQL's pg_is_in_recovery(), MySQL's
//     @@read_only), so that a pooler spreading connections over a primary
//     and a lagging standby cannot route a key read to the standby after
//     the store's check at Open passed on the primary.

// ledgerChecked verifies the database's ledger against the keyring, at
// most once per TTL (a successful verification is remembered; a refusal
// is not). Without Config.Ledger it checks nothing, and with
// Config.Verified (a recovery, whose ledger is behind on purpose) neither.
func (s *Store) ledgerChecked(ctx context.Context) error {
	if s.cfg.Ledger == nil || s.cfg.Verified != nil {
		return nil
	}
	now := time.Now().UnixNano()
	if last := s.ledgerOK.Load(); last != 0 && now-last < int64(s.cfg.TTL) {
		return nil
	}
	st, err := s.cfg.Ledger.Verified(ctx, s.cfg.Keyring)
	if err != nil {
		return fmt.Errorf("subject: %s: the database's ledger refuses the keyring, so its keys are not handed out (a database that went back in time holds forgotten subjects' keys: run 'ward ledger recover'): %w", s.cfg.Namespace, err)
	}
	if st != nil { // what databaseID would read again
		s.mu.Lock()
		s.dbID = st.Database
		s.mu.Unlock()
		if err := s.setFloor(st); err != nil {
			return err
		}
	}
	s.ledgerOK.Store(now)
	return nil
}

// standbyColumn is a SELECT expression that is true when the statement
// runs on a standby (or a read-only MySQL replica), false on a primary
// and on SQLite.
func (s *Store) standbyColumn() string {
	switch s.cfg.Dialect {
	case field.Postgres:
		return "pg_is_in_recovery()"
	case field.MySQL:
		return "@@read_only <> 0"
	}
	return "1 = 0"
}

// onStandby is the error for a key read that ran on a standby.
func (s *Store) onStandby() error {
	err := sqltable.ErrStandby
	if s.cfg.Dialect == field.MySQL {
		err = sqltable.ErrReadOnly
	}
	return fmt.Errorf("subject: %s: a key was read from a standby (a pooler that routes to it?): %w", s.cfg.Namespace, err)
}
