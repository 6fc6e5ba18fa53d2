package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/dburl"
	"github.com/wardlab/ward/keyring"
)

// ledgers are the keyring ledgers of the databases a command was given
// with --db: checked before the command writes keys or values, recorded
// after, so that a database refuses a restored older keyring file, or a
// keyring that lacks a key its values use.
type ledgers struct {
	urls []string
	dbs  []*sql.DB
	l    []*field.Ledger
}

// openLedgers opens the ledger of every database URL given.
func openLedgers(urls []string) (*ledgers, error) {
	ls := &ledgers{urls: urls}
	for _, u := range urls {
		db, dialect, err := openDB(u)
		if err != nil {
			ls.close()
			return nil, err
		}
		ls.dbs = append(ls.dbs, db)
		ls.l = append(ls.l, &field.Ledger{DB: db, Dialect: dialect})
	}
	return ls, nil
}

func (ls *ledgers) close() {
	for _, db := range ls.dbs {
		db.Close()
	}
}

// check refuses kr for any database whose ledger says it is another
// keyring, an older copy, or lacks a key the database uses.
func (ls *ledgers) check(ctx context.Context, kr *keyring.Keyring) error {
	for i, l := range ls.l {
		if err := l.Check(ctx, kr); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			hint := "is this the keyring file of that database, and its latest copy?"
			if errors.Is(err, keyring.ErrRollback) {
				hint = "this keyring file is older than one the database has seen: find the latest copy; an older one would make values unreadable"
			}
			return cli.Failed(fmt.Errorf("the ledger of %s refuses keyring %s: %w", dburl.Redact(ls.urls[i]), kr.ID(), err), hint)
		}
	}
	return nil
}

// record adds ids (default: the primary) and the keyring's generation to
// every ledger.
func (ls *ledgers) record(ctx context.Context, kr *keyring.Keyring, ids ...keyring.KeyID) error {
	for i, l := range ls.l {
		if err := l.Record(ctx, kr, ids...); err != nil {
			return fmt.Errorf("recording in the ledger of %s: %w", dburl.Redact(ls.urls[i]), err)
		}
	}
	return nil
}

// keyChange runs a change to the keyring's keys under the ledgers of the
// databases given with --db: each is checked first and records the keys
// and generation after; without --db the command warns that no database
// was consulted.
func (a *app) keyChange(cmd *cobra.Command, kr *keyring.Keyring, change func() ([]keyring.KeyID, error)) error {
	ls, err := openLedgers(a.dbs)
	if err != nil {
		return err
	}
	defer ls.close()
	if len(a.dbs) == 0 {
		fmt.Fprintln(a.stderr, "ward: warning: no database ledger was checked: pass --db for each database this keyring serves, so that a stale keyring file is refused and the new key is recorded")
	}
	if err := ls.check(cmd.Context(), kr); err != nil {
		return err
	}
	ids, err := change()
	if err != nil {
		return err
	}
	return ls.record(cmd.Context(), kr, ids...)
}
