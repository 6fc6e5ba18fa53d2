package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// ledgers are the keyring ledgers of the databases a command was given
// with --db: checked before the command writes keys or values, recorded
// after, so that a database refuses a restored older keyring file, or a
// keyring that lacks a key its values use.
type ledgers struct {
	urls []string
	dbs  []*sql.DB
	l    []*ledger.Ledger
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
		ls.l = append(ls.l, &ledger.Ledger{DB: db, Dialect: dialect})
	}
	return ls, nil
}

// openCheckedLedgers opens the ledgers of urls and checks kr against each
// (see check): what every command that writes keys or values does first.
func openCheckedLedgers(ctx context.Context, urls []string, kr *keyring.Keyring) (*ledgers, error) {
	ls, err := openLedgers(urls)
	if err != nil {
		return nil, err
	}
	if err := ls.check(ctx, kr); err != nil {
		ls.close()
		return nil, err
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
			if errors.Is(err, ledger.ErrNewDatabase) {
				return cli.Failed(fmt.Errorf("%s is new to keyring %s: %w", dburl.Redact(ls.urls[i]), kr.ID(), err),
					"adopt it once: 'ward ledger adopt --another-database --db URL'")
			}
			return cli.Failed(fmt.Errorf("the ledger of %s refuses keyring %s: %w", dburl.Redact(ls.urls[i]), kr.ID(), err), refusalHint(err))
		}
	}
	return nil
}

// refusalHint says what to do about a ledger's refusal of a keyring.
func refusalHint(err error) string {
	switch {
	case errors.Is(err, keyring.ErrRollback):
		return "this keyring file is older than one the database has seen: find the latest copy; an older one would make values unreadable"
	case errors.Is(err, ledger.ErrNotAdopted):
		return "the database's ledger is from an earlier release: run 'ward ledger adopt --db URL' once"
	case errors.Is(err, ledger.ErrMissing):
		return "if this database is new to the keyring, run 'ward ledger adopt --another-database --db URL'; if not, its ledger was deleted: restore it from a backup"
	case errors.Is(err, ledger.ErrReplayed):
		return "the database went back in time: a failover that lost its last commits or a restore from backup (then run 'ward ledger recover --db URL --forget-journal DIR'), or a database writer's rollback (find out who; the same command recovers)"
	case errors.Is(err, ledger.ErrTampered):
		return "someone with write access to the database changed its ledger: restore it from a backup, and find out who"
	case errors.Is(err, ledger.ErrNewDatabase):
		return "adopt it once: 'ward ledger adopt --another-database --db URL'"
	case errors.Is(err, keyring.ErrWrongKeyring), errors.Is(err, ledger.ErrAnchorMissing), errors.As(err, new(*ledger.MissingKeysError)):
		return "is this the keyring file of that database, and its latest copy? 'ward keyring list' shows the keyring's keys and generation"
	case errors.Is(err, ledger.ErrStandby), errors.Is(err, ledger.ErrReadOnly), errors.Is(err, ledger.ErrNoCausalReads), errors.Is(err, ledger.ErrNotStrict):
		return "the error names the setting or server to change"
	case errors.Is(err, ledger.ErrNodeNotReady):
		return "this Galera node is outside the primary component (error 1047) or the cluster is reconfiguring after a node left (error 1205): nothing was decided or written; retry, or use another node"
	}
	// Not a verdict on the keyring: the ledger could not be read at all.
	return "the database did not answer the check (the error says how): nothing was decided or written; retry. On Galera, a node refuses statements while the cluster reconfigures after a node left (error 1205, lock wait timeout) or while it is outside the primary component (error 1047, WSREP not ready): retry, or use another node"
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
	if len(a.dbs) == 0 {
		fmt.Fprintln(a.stderr, "ward: warning: no database ledger was checked: pass --db for each database this keyring serves, so that a stale keyring file is refused and the new key is recorded")
	}
	ls, err := openCheckedLedgers(cmd.Context(), a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	ids, err := change()
	if err != nil {
		return err
	}
	return ls.record(cmd.Context(), kr, ids...)
}

// ledgerReport is what 'ward ledger' shows of one database.
type ledgerReport struct {
	DB     string         `json:"db"`
	Ledger *ledger.State  `json:"ledger"`
	Anchor *ledger.Anchor `json:"anchor,omitempty"`
	Check  string         `json:"check,omitempty"`
	// Durability says what the database's replication gives ward's
	// promises (ledger.InspectReplication), as a service says it at start.
	Durability string `json:"durability,omitempty"`
}

func (a *app) newLedgerCmd() *cobra.Command {
	var dbs, journals []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ledger --db URL... [--forget-journal DIR]...",
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
			for _, j := range journals {
				if fi, err := os.Stat(j); err != nil || !fi.IsDir() {
					return cli.Usage(fmt.Errorf("--forget-journal %s is not a folder", j), "name the forget journal folder the service keeps (ward-chat: beside its keyring file)")
				}
			}
			out, refused, err := a.ledgerReports(cmd, dbs, len(journals) > 0)
			if err != nil {
				return err
			}
			if asJSON {
				if err := a.writeJSON(out); err != nil {
					return err
				}
			} else {
				a.printLedgers(out)
			}
			if refused != nil {
				return cli.Failed(fmt.Errorf("a database refuses this keyring: %w", refused), refusalHint(refused))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dbs, "db", nil, "a database (repeatable)")
	cmd.Flags().StringArrayVar(&journals, "forget-journal", nil, "the forget journal folder the service keeps (repeatable): the durability line then counts it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{db, ledger: {database, keyring, keys: [{id, state}], generation, counter, epoch, marks, columns, counters, recheck, recoveries}, anchor: {counter, epoch, marks, counters, columns}, check, durability}]")
	cmd.AddCommand(a.newLedgerAdoptCmd(), a.newLedgerRecoverCmd())
	return cmd
}

// ledgerReports reads each database's ledger and, when a keyring is given,
// its anchor and whether the database accepts it (refused: the last
// refusal).
func (a *app) ledgerReports(cmd *cobra.Command, dbs []string, journaled bool) (out []ledgerReport, refused, err error) {
	ls, err := openLedgers(dbs)
	if err != nil {
		return nil, nil, err
	}
	defer ls.close()
	var kr *keyring.Keyring
	if path, _ := a.keyringFile(); path != "" {
		if kr, err = a.loadKeyring(cmd); err != nil {
			return nil, nil, err
		}
	}
	for i, l := range ls.l {
		st, err := l.Read(cmd.Context())
		if err != nil {
			return nil, nil, err
		}
		r := ledgerReport{DB: dburl.Redact(dbs[i]), Ledger: st}
		if kr != nil && st != nil {
			if a, ok := (*keycore.Keyring)(kr).Anchor(st.Database); ok {
				r.Anchor = &a
			}
		}
		if rep, err := ledger.InspectReplication(cmd.Context(), ls.dbs[i], l.Dialect); err == nil {
			r.Durability, _ = rep.Summary(journaled)
		}
		if kr != nil {
			r.Check = "accepts " + kr.ID()
			if err := l.Check(cmd.Context(), kr); err != nil {
				r.Check, refused = "refuses "+kr.ID()+": "+err.Error(), err
			}
		}
		out = append(out, r)
	}
	return out, refused, nil
}

func (a *app) printLedgers(out []ledgerReport) {
	for _, r := range out {
		fmt.Fprintf(a.stdout, "%s:\n", r.DB)
		if st := r.Ledger; st == nil {
			fmt.Fprintln(a.stdout, "  no ledger yet")
		} else {
			fmt.Fprintf(a.stdout, "  database %s, keyring %s, generation %d seen, counter %d, state key %d\n", st.Database, st.Keyring, st.Generation, st.Counter, st.Epoch)
			for _, k := range st.Keys {
				fmt.Fprintf(a.stdout, "  key %v (%s)\n", k.ID, k.State)
			}
			if len(st.Marks) > 0 {
				fmt.Fprintf(a.stdout, "  marks: %s\n", strings.Join(st.Marks, ", "))
			}
			for _, r := range st.Recoveries {
				fmt.Fprintf(a.stdout, "  recovered %s from counter %d (anchored at %d): %s\n", r.At.Format(time.RFC3339), r.Found, r.Anchor, r.Summary)
			}
			for _, c := range st.Recheck {
				fmt.Fprintf(a.stdout, "  %s may hold older values since a recovery: run its census, %s\n", printable.String(c), checkCommand(r.DB, st, c))
			}
		}
		if an := r.Anchor; an != nil {
			fmt.Fprintf(a.stdout, "  anchored in the keyring file at counter %d, state key %d\n", an.Counter, an.Epoch)
		}
		if r.Check != "" {
			fmt.Fprintf(a.stdout, "  %s\n", r.Check)
		}
		if r.Durability != "" {
			fmt.Fprintf(a.stdout, "  durability: %s\n", r.Durability)
		}
	}
}

func (a *app) newLedgerAdoptCmd() *cobra.Command {
	var dbs []string
	var another bool
	cmd := &cobra.Command{
		Use:   "adopt --db URL...",
		Short: "Give a database its authenticated ledger, once",
		Long: `Give each database its authenticated ledger, anchored in the keyring file:
take over the unauthenticated ledger of an earlier release (trusting its
entries as they are, after checking that they name this keyring, no newer
generation and no key it lacks), or start one for a database this keyring
has not served yet (--another-database, required while the keyring file
anchors any database). Run it once per database, as an operator: services
refuse a database whose ledger is unauthenticated, and a database whose
ledger is missing while the keyring anchors it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name each database to adopt")
			}
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			ls, err := openLedgers(dbs)
			if err != nil {
				return err
			}
			defer ls.close()
			for i, l := range ls.l {
				got, err := l.Adopt(cmd.Context(), kr, ledger.AdoptOptions{AnotherDatabase: another})
				switch {
				case errors.Is(err, ledger.ErrAlreadyAdopted):
					return cli.Failed(fmt.Errorf("%s: %w", dburl.Redact(dbs[i]), err), "nothing to do: 'ward ledger --db URL' shows it")
				case errors.Is(err, ledger.ErrMissing):
					return cli.Failed(fmt.Errorf("%s: %w", dburl.Redact(dbs[i]), err), "pass --another-database if this database is new to the keyring")
				case err != nil:
					return fmt.Errorf("%s: %w", dburl.Redact(dbs[i]), err)
				}
				fmt.Fprintf(a.stdout, "%s: adopted as database %s under keyring %s (%d entries of the unauthenticated ledger trusted as they were)\n",
					dburl.Redact(dbs[i]), got.Database, kr.ID(), got.Legacy)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dbs, "db", nil, "a database (repeatable)")
	cmd.Flags().BoolVar(&another, "another-database", false, "the database is new to this keyring, which already anchors others")
	return cmd
}

// checkCommand is the census that takes a column (TABLE.COLUMN) off the
// ledger's list of columns to check again, with the flags its record in
// st gives ("--check" alone when st does not record it).
func checkCommand(db string, st *ledger.State, name string) string {
	i := slices.IndexFunc(st.Columns, func(c ledger.Column) bool { return c.Table+"."+c.Column == name })
	if i < 0 || st.Columns[i].Kind != "" {
		return "--check"
	}
	c := st.Columns[i]
	args := []string{"ward encrypt-column --db", shellWord(db), "--table", shellWord(c.Table), "--column", shellWord(c.Column), "--key", shellWord(c.Key)}
	for _, b := range c.Bind {
		args = append(args, "--bind", shellWord(b))
	}
	if c.Text {
		args = append(args, "--text")
	}
	return "'" + strings.Join(append(args, "--check"), " ") + "'"
}

// shellWord quotes s for a POSIX shell unless it needs none; a name that
// is not printable stays escaped (printable.String).
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@=%+-", r))
	}) {
		return s
	}
	return printable.String(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`)
}
