package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// reindexOptions are the flags of 'ward keyring reindex': which
// recorded indexes to move, and how long each wait for the fleet may take.
type reindexOptions struct {
	table, column, index string
	wait                 time.Duration
}

// named says whether the flags name an index rather than take them all.
func (o reindexOptions) named() bool { return o.table != "" || o.column != "" || o.index != "" }

// matches says whether the flags select x.
func (o reindexOptions) matches(x ledger.IndexColumn) bool {
	return (o.table == "" || o.table == x.Table) && (o.column == "" || o.column == x.Column) && (o.index == "" || o.index == x.Name)
}

// newKeyringReindexCmd is 'ward keyring reindex': lifecycle.Reindex
// over the blind indexes each database's ledger records.
func (a *app) newKeyringReindexCmd() *cobra.Command {
	var o reindexOptions
	cmd := &cobra.Command{
		Use:   "reindex --db URL... [--table T] [--column C] [--index NAME]",
		Short: "Move blind indexes to the current integrity epoch with the fleet serving",
		Long: `Move every blind index v2 each database's ledger records with a spare column
(ledger.Ledger.Indexer) to the current integrity epoch — the primary key's —
with every process serving: record the re-key, wait until every process
registered in the database writes both columns, fill the spare column of
every row from its sealed value, wait until every process writes it alone,
fill again and check no row lacks its new index, clear the old column and
switch. Log-ins find their users throughout and no address gets a second
account (FORMAT.md, "Blind index v2"). --table, --column and --index pick
indexes; without them every recorded index is taken.

Run it after a rotation, then retire the old key ('ward keyring retire'),
which refuses while an index lives under it. An index without a spare
column, or computed with an application's own normaliser (which only the
application can run: lifecycle.Reindex with ReindexOptions.Normalizer),
is named and left where it is. A wait gives up after --wait; running the
command again, after that or a kill, continues where it stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(a.dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name the databases whose blind indexes to move")
			}
			kr, ls, err := a.keyringLedgers(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			defer a.jobGC()()
			for _, d := range ls.databases() {
				if err := a.reindex(cmd.Context(), kr, d, o); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.table, "table", "", "only the indexes of this table")
	cmd.Flags().StringVar(&o.column, "column", "", "only the indexes of this sealed column")
	cmd.Flags().StringVar(&o.index, "index", "", "only the index of this name (the column's name unless the application named it)")
	cmd.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "give up each wait for the fleet after this long")
	return cmd
}

// reindex re-keys the indexes of one database the flags pick, printing
// what each became.
func (a *app) reindex(ctx context.Context, kr *keyring.Keyring, d lifecycle.Database, o reindexOptions) error {
	st, err := d.Ledger.Verified(ctx, kr)
	if err != nil {
		return cli.Failed(fmt.Errorf("%s: %w", d.Name, err), refusalHint(err))
	}
	var picked []ledger.IndexColumn
	for _, x := range stateIndexes(st) {
		if o.matches(x) {
			picked = append(picked, x)
		}
	}
	if len(picked) == 0 && o.named() {
		return cli.Failed(fmt.Errorf("%s: the ledger records no blind index matching --table %q --column %q --index %q", d.Name, o.table, o.column, o.index),
			"an index is recorded by the application's first use of it (ledger.Ledger.Index or Indexer)")
	}
	if len(picked) == 0 {
		fmt.Fprintf(a.stdout, "%s: the ledger records no blind index\n", d.Name)
	}
	for _, x := range picked {
		if why := notRekeyable(x); why != "" {
			fmt.Fprintf(a.stdout, "%s: blind index %s of %s.%s %s: left under epoch %v\n", d.Name, x.Name, x.Table, x.Column, why, x.Epoch)
			continue
		}
		res, err := lifecycle.Reindex(ctx, kr, d, x.Table, x.Column, x.Name, lifecycle.ReindexOptions{
			Wait: o.wait, Observer: a.reindexObserver(kr),
		})
		if err != nil {
			return reindexError(fmt.Errorf("%s: blind index %s of %s.%s: %w", d.Name, x.Name, x.Table, x.Column, err))
		}
		a.printReindex(d.Name, res)
	}
	return nil
}

// notRekeyable says why the command cannot re-key x ("" if it can).
func notRekeyable(x ledger.IndexColumn) string {
	if x.Spare == "" {
		return "has no spare column (give ledger.Ledger.Indexer one)"
	}
	if _, err := field.ParseNormalizer(x.Normalizer, x.NormalizerVersion); err != nil {
		return fmt.Sprintf("is computed with the application's own normaliser %q (the application re-keys it: lifecycle.Reindex)", x.Normalizer)
	}
	return ""
}

// reindexError gives a re-key's failure its exit code and hint.
func reindexError(err error) error {
	var nr *fleet.NotReadyError
	switch {
	case errors.As(err, &nr) && errors.Is(err, context.Canceled):
		return interrupted(context.Canceled)
	case errors.As(err, &nr):
		return cli.Failed(err, "a process that does not follow the index's record (a release before re-keys, or a frozen one): wait until its heartbeat is older than 2 minutes, or upgrade it; then run the command again, which continues")
	case errors.Is(err, lifecycle.ErrReindexIncomplete):
		return cli.Failed(err, "rows whose values did not open keep the old index: see 'ward reseal --dry-run', then run the command again")
	}
	return interrupted(err)
}

// reindexObserver prints a re-key's waits as a rotation's, and its fills.
func (a *app) reindexObserver(kr *keyring.Keyring) lifecycle.Observer {
	obs := a.rotationObserver(kr)
	obs.Column = func(c lifecycle.ColumnResult, _ error) {
		fmt.Fprintf(a.stdout, "%s.%s: %d rows given their new index\n", c.Column.Table, c.Column.Column, c.Stats.Indexed)
	}
	return obs
}

// printReindex prints what a re-key did.
func (a *app) printReindex(db string, res lifecycle.ReindexResult) {
	x := res.Index
	cur, _ := x.Columns()
	if res.Current {
		fmt.Fprintf(a.stdout, "%s: blind index %s of %s.%s is under the current epoch %v in %s (%d stale values cleared)\n", db, x.Name, x.Table, x.Column, x.Epoch, cur, res.Cleared)
		return
	}
	from := "v1 (the keyring root)"
	if res.From != 0 {
		from = "epoch " + res.From.String()
	}
	fmt.Fprintf(a.stdout, "%s: blind index %s of %s.%s moved from %s to epoch %v: %d rows indexed, now in %s; %d old values cleared\n", db, x.Name, x.Table, x.Column, from, res.To, res.Fill.Indexed, cur, res.Cleared)
}
