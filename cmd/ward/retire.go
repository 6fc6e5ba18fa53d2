package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// newKeyringRetireCmd removes a key's material for good, after a census
// of every database finds nothing under it.
func (a *app) newKeyringRetireCmd() *cobra.Command {
	var replicas, skipTables []string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "retire KEY-ID --db URL... [--replica URL...]",
		Short: "Remove a key from the keyring for good, once nothing references it",
		Long: `Retire a key: check every database given with --db — each column its ledger
records (values under the key) and every subject key (wrapped under the
key) — and refuse while anything still uses its material, naming what and
how to move it ('ward keyring rotate --db', 'ward reseal', 'ward subject
reseal'). Password hashes peppered with the key do not hold it back: its
pepper key (a one-way derivation, which opens no value and unwraps no
subject key) is kept in the keyring file, so they keep verifying, and
users who never log in again do not keep the key alive. Then record the
key as retired in every ledger and remove its material from the keyring
file. Values and subject keys in
database backups taken before and still under the key no longer open with
this keyring file; copies of the keyring file saved before still hold the
key: destroy them (SECURITY.md).

Applications that read ciphertexts from replicas name each with --replica:
retire first waits (up to --replica-wait) until every one has replayed its
primary's writes, so that none still serves a value under the key, and
refuses if one has not.

Values are looked for in every text and binary column of every table, not
only the columns the ledgers record: a column an application seals into
but never recorded holds the key back too (the sweep reads the first 16
bytes of each value). --skip-table leaves out a table that holds copies
retiring the key is meant to make unreadable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.retireKey(cmd, args[0], retireOptions{replicas: replicas, skipTables: skipTables, wait: wait})
		},
	}
	cmd.Flags().StringArrayVar(&skipTables, "skip-table", nil, "a table the sweep of every column skips (repeatable): a copy kept on purpose, such as an in-database backup, whose values retiring the key is meant to make unreadable")
	cmd.Flags().StringArrayVar(&replicas, "replica", nil, "a streaming replica applications read ciphertexts from (repeatable): wait until it has replayed its primary's writes")
	cmd.Flags().DurationVar(&wait, "replica-wait", time.Minute, "how long to wait for the replicas before refusing")
	return cmd
}

// retireOptions are retire's flags.
type retireOptions struct {
	replicas, skipTables []string
	wait                 time.Duration
}

// retireKey is 'ward keyring retire KEY-ID'.
func (a *app) retireKey(cmd *cobra.Command, arg string, o retireOptions) error {
	ctx := cmd.Context()
	id, err := keyring.ParseKeyID(arg)
	if err != nil {
		return cli.Usage(err, "see 'ward keyring list' for key IDs")
	}
	if len(a.dbs) == 0 {
		return cli.Usage(errors.New("--db is required"), "name every database this keyring serves: retiring is only safe once all of them are checked")
	}
	kr, err := a.loadKeyring(cmd)
	if err != nil {
		return err
	}
	ls, err := openCheckedLedgers(ctx, a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	if err := a.awaitReplicas(ctx, ls, o.replicas, o.wait); err != nil {
		return err
	}
	dbs := ls.databases()
	for i := range dbs {
		dbs[i].Unswept = o.skipTables
	}
	kept, err := lifecycle.Retire(ctx, kr, dbs, id)
	if again, rerr := a.reissueForRetire(ctx, kr, ls, id, err); rerr != nil {
		return rerr
	} else if again {
		kept, err = lifecycle.Retire(ctx, kr, dbs, id)
	}
	var refs *lifecycle.ReferencedError
	switch {
	case errors.Is(err, keyring.ErrUnknownKey):
		return cli.Usage(err, "see 'ward keyring list'")
	case errors.Is(err, lifecycle.ErrPrimary):
		return cli.Usage(err, "rotate first: 'ward keyring rotate --db URL'")
	case errors.As(err, &refs):
		for _, r := range refs.References {
			fmt.Fprintln(a.stderr, "ward: "+r.DB+": "+r.What)
		}
		hint := "move them first: 'ward reseal' for columns, 'ward subject reseal' for subject keys"
		if slices.ContainsFunc(refs.References, func(r lifecycle.Reference) bool { return r.Grant != "" }) {
			hint += ", 'ward grant revoke ID' for grants ('ward grant list' first settles one a killed 'ward grant' left pending)"
		}
		return cli.Failed(err, hint)
	case err != nil:
		return saveError(err)
	}
	for _, r := range kept {
		fmt.Fprintf(a.stdout, "%s: %s: they keep verifying (the key's pepper key is kept; its material is gone) and move to the current pepper at their users' next log-in\n", r.DB, r.What)
	}
	fmt.Fprintf(a.stdout, "key %v retired: removed from %s and recorded in %d ledgers; copies of the keyring file saved before still hold it — destroy them\n", id, kr.Path(), len(ls.l))
	return nil
}

// awaitReplicas waits until each replica has replayed what its primary
// (the --db database with the same system identifier) has written.
func (a *app) awaitReplicas(ctx context.Context, ls *ledgers, replicas []string, wait time.Duration) error {
	for _, url := range replicas {
		rdb, _, err := openDB(url)
		if err != nil {
			return err
		}
		defer rdb.Close()
		primary, err := primaryOf(ctx, ls, rdb)
		if err != nil {
			return cli.Usage(fmt.Errorf("--replica %s: %w", dburl.Redact(url), err), "name a streaming replica of one of the --db databases")
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		err = ledger.WaitReplayed(wctx, primary, rdb, 0)
		cancel()
		if err != nil {
			return cli.Failed(fmt.Errorf("--replica %s: %w", dburl.Redact(url), err), "nothing was changed: wait for the replica to catch up (or stop reading from it), then retire again")
		}
		fmt.Fprintf(a.stderr, "ward: replica %s has replayed its primary's writes\n", dburl.Redact(url))
	}
	return nil
}

// primaryOf finds the --db database a replica streams from: the same
// PostgreSQL system identifier (a physical replica's is its primary's).
func primaryOf(ctx context.Context, ls *ledgers, replica *sql.DB) (*sql.DB, error) {
	var id string
	if err := replica.QueryRowContext(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id); err != nil {
		return nil, fmt.Errorf("not a PostgreSQL server: %w", err)
	}
	for _, db := range ls.dbs {
		var pid string
		if db.QueryRowContext(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&pid) == nil && pid == id {
			return db, nil
		}
	}
	return nil, errors.New("it replicates none of the --db databases (no --db has its system identifier)")
}
