package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// DBEnv names the environment variable with the default database URL; use
// it rather than --db when the URL holds a password.
const DBEnv = "WARD_DB"

type rotateOptions struct {
	db, table, column, key string
	bind                   []string
	text, dryRun, quiet    bool
	batch                  int
	pause                  time.Duration
}

func (a *app) newRotateCmd() *cobra.Command {
	var o rotateOptions
	cmd := &cobra.Command{
		Use:   "rotate --db URL --table T --column C",
		Short: "Re-encrypt a column's values under the primary key, current format and binding",
		Long: `Re-encrypt every value of an encrypted column that is not up to date: under
an older key than the keyring's primary, in ciphertext v1, or (with --bind)
bound to its row only rather than to its bound columns. In batches, one
transaction per batch, never overwriting a row that changed since it was
read. Safe to interrupt and run again: values already up to date are
skipped. --dry-run only counts values per key ID, version and binding. Run
it after 'ward keyring rotate', then disable the old key.

Databases: postgres://USER@HOST/DB (password via $WARD_DB or PGPASSWORD, not
argv) and sqlite:PATH.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.rotate(cmd, &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "database URL (default $"+DBEnv+")")
	f.StringVar(&o.table, "table", "", "table name")
	f.StringVar(&o.column, "column", "", "encrypted column")
	f.StringVar(&o.key, "key", "id", "primary-key column (the row key in each value's context)")
	f.StringArrayVar(&o.bind, "bind", nil, "a bound column (field.Bind), repeated in order: values are re-bound to them")
	f.BoolVar(&o.text, "text", false, "the column stores the text form (TEXT columns)")
	f.BoolVar(&o.dryRun, "dry-run", false, "count values per key ID and change nothing")
	f.IntVar(&o.batch, "batch", 500, "rows per transaction")
	f.DurationVar(&o.pause, "pause", 0, "sleep between batches, to limit load")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	return cmd
}

func (a *app) rotate(cmd *cobra.Command, o *rotateOptions) error {
	if o.db == "" {
		o.db = a.getenv(DBEnv)
	}
	if o.db == "" || o.table == "" || o.column == "" {
		return usage(errors.New("--db, --table and --column are required"), "")
	}
	kr, err := a.loadKeyring(cmd)
	if err != nil {
		return err
	}
	db, dialect, err := openDB(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	enc := field.Binary
	if o.text {
		enc = field.Text
	}
	opts := []field.ColumnOption{field.WithEncoding(enc)}
	if o.bind != nil {
		opts = append(opts, field.Bind(o.bind...))
	}
	col, err := field.NewColumn(kr, o.table, o.column, opts...)
	if err != nil {
		return usage(err, "")
	}
	job := &field.Reencrypt{DB: db, Dialect: dialect, Column: col, Key: o.key, BatchSize: o.batch, Pause: o.pause}
	if o.dryRun {
		c, err := job.Count(cmd.Context())
		if err != nil {
			return err
		}
		a.printCensus(kr, o.table+"."+o.column, c, o.bind != nil)
		return nil
	}
	bar := newProgress(a.stderr, "re-encrypting "+o.table+"."+o.column, 1, o.quiet)
	job.Progress = func(p field.Progress) { bar.set(p.Scanned, max(p.Total, p.Scanned)) }
	st, err := job.Run(cmd.Context())
	bar.finish()
	fmt.Fprintf(a.stdout, "%s.%s: %d re-encrypted under %v, %d already up to date, %d NULL, %d conflicts, %d failed (%d passes)\n",
		o.table, o.column, st.Reencrypted, kr.Primary().ID, st.Current, st.Null, st.Conflicts, st.Failed, st.Passes)
	if errors.Is(err, field.ErrUnreadableRows) {
		return failed(err, "the rows that failed are unchanged; check 'ward rotate --dry-run' for keys missing from the keyring")
	}
	return err
}

// printCensus prints a dry run's counts.
func (a *app) printCensus(kr *keyring.Keyring, name string, c field.Census, bound bool) {
	fmt.Fprintf(a.stdout, "%s: %d rows, %d NULL, %d malformed, %d up to date\n", name, c.Rows, c.Null, c.Malformed, c.Current)
	for _, id := range slices.Sorted(maps.Keys(c.PerKey)) {
		state := "not in keyring"
		if info, ok := kr.Lookup(id); ok {
			state = info.State.String()
		}
		fmt.Fprintf(a.stdout, "  key %v (%s): %d values\n", id, state, c.PerKey[id])
	}
	for _, v := range slices.Sorted(maps.Keys(c.PerVersion)) {
		fmt.Fprintf(a.stdout, "  ciphertext v%d: %d values\n", v, c.PerVersion[v])
	}
	if bound {
		fmt.Fprintf(a.stdout, "  bound to the row only (v1 binding): %d; matching no binding: %d\n", c.LegacyBinding, c.Unbound)
	}
}
