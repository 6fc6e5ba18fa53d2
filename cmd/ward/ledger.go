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

func (a *app) newLedgerCmd() *cobra.Command {
	var dbs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ledger --db URL...",
		Short: "Show each database's keyring ledger, and check the keyring against it",
		Long: `Show what each database's keyring ledger records (the keyring its values
are sealed under, the key IDs they may use, the highest keyring generation
seen) and, when a keyring is given (--keyring or WARD_KEYRING), whether the
database accepts it. Exit 1 if a database refuses the keyring.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name each database whose ledger to show")
			}
			ls, err := openLedgers(dbs)
			if err != nil {
				return err
			}
			defer ls.close()
			var kr *keyring.Keyring
			if path, _ := a.keyringFile(); path != "" {
				if kr, err = a.loadKeyring(cmd); err != nil {
					return err
				}
			}
			type dbReport struct {
				DB      string              `json:"db"`
				Entries []field.LedgerEntry `json:"entries"`
				Check   string              `json:"check,omitempty"`
			}
			var out []dbReport
			var refused error
			for i, l := range ls.l {
				es, err := l.Entries(cmd.Context())
				if err != nil {
					return err
				}
				r := dbReport{DB: dburl.Redact(dbs[i]), Entries: es}
				if kr != nil {
					r.Check = "accepts " + kr.ID()
					if err := l.Check(cmd.Context(), kr); err != nil {
						r.Check, refused = "refuses "+kr.ID()+": "+err.Error(), err
					}
				}
				out = append(out, r)
			}
			if asJSON {
				if err := a.writeJSON(out); err != nil {
					return err
				}
			} else {
				for _, r := range out {
					fmt.Fprintf(a.stdout, "%s:\n", r.DB)
					if len(r.Entries) == 0 {
						fmt.Fprintln(a.stdout, "  no keyring recorded yet")
					}
					for _, e := range r.Entries {
						fmt.Fprintf(a.stdout, "  keyring %s key %v (generation %d seen)\n", e.Keyring, e.Key, e.Generation)
					}
					if r.Check != "" {
						fmt.Fprintf(a.stdout, "  %s\n", r.Check)
					}
				}
			}
			if refused != nil {
				return cli.Failed(errors.New("a database refuses this keyring"), "see the lines above; 'ward keyring list' shows the keyring's keys and generation")
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dbs, "db", nil, "a database (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{db, entries: [{keyring, key, generation}], check}]")
	return cmd
}
