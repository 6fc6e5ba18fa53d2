package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lifecycle"
)

// subjectCmds are the 'ward subject' commands, which share one --db.
type subjectCmds struct {
	a   *app
	dbs []string
}

func (a *app) newSubjectCmd() *cobra.Command {
	sc := &subjectCmds{a: a}
	cmd := &cobra.Command{
		Use:   "subject",
		Short: "Subjects' own keys: forget a subject, audit tombstones, reseal and re-key",
		Long: `Subjects (users, tenants) whose values a PerSubject column seals under their
own key (field/subject): forget one by deleting its key, audit the
tombstones forgets leave, reseal every subject key under the keyring's
primary key before retiring an older one, and give every subject a new key
version (rekey).`,
	}
	cmd.PersistentFlags().StringArrayVar(&sc.dbs, "db", nil, "the database (required)")
	cmd.AddCommand(sc.forget(), sc.audit(), sc.reseal(), sc.rekey(),
		deprecated(sc.rekey(), "rotate", "ward subject rekey", a.stderr),
		deprecated(sc.reseal(), "rewrap", "ward subject reseal", a.stderr))
	return cmd
}

// open loads the keyring and checks the one database's ledger.
func (sc *subjectCmds) open(cmd *cobra.Command) (*keyring.Keyring, *ledgers, error) {
	if len(sc.dbs) != 1 {
		return nil, nil, cli.Usage(errors.New("exactly one --db is required"), "name the database that holds the subject keys")
	}
	kr, err := sc.a.loadKeyring(cmd)
	if err != nil {
		return nil, nil, err
	}
	ls, err := openCheckedLedgers(cmd.Context(), sc.dbs, kr)
	return kr, ls, err
}

// withLedger runs fn over the store of every namespace of the database,
// with its checked ledger.
func (sc *subjectCmds) withLedger(cmd *cobra.Command, fn func(kr *keyring.Keyring, ls *ledgers, stores []*subject.Store) error) error {
	kr, ls, err := sc.open(cmd)
	if err != nil {
		return err
	}
	defer ls.close()
	stores, err := lifecycle.Stores(cmd.Context(), kr, ls.databases()[0])
	if err != nil {
		return err
	}
	return fn(kr, ls, stores)
}

func (sc *subjectCmds) forget() *cobra.Command {
	var ns, jdir string
	forget := &cobra.Command{
		Use:   "forget --db URL --namespace NS SUBJECT...",
		Short: "Erase subjects: delete their keys and leave an authenticated tombstone",
		Long: `Erase each subject: its keys are deleted and an authenticated tombstone,
counted in the database's ledger, says so. From then on every value of the
subject fails to open with "subject erased" — at once in this process,
within the cache TTL in running services — and no new value is sealed for
it. Rows may be deleted later. A database backup taken before still holds
the subject's wrapped key until the keyring key that wrapped it is retired
('ward subject reseal', then 'ward keyring retire'): SECURITY.md.

With --forget-journal (or WARD_FORGET_JOURNAL), each forget is also
appended to that journal folder before it commits, so that a recovery
after the database went back in time re-applies it ('ward ledger recover';
docs/OPERATIONS.md).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ns == "" {
				return cli.Usage(errors.New("--namespace is required"), "the namespace the application's subjects live in, such as users")
			}
			kr, ls, err := sc.open(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			cfg := subject.Config{DB: ls.dbs[0], Dialect: ls.l[0].Dialect, Keyring: kr, Ledger: ls.l[0], Namespace: ns}
			if jdir == "" {
				jdir = sc.a.getenv("WARD_FORGET_JOURNAL")
			}
			if jdir != "" {
				if cfg.Journal, err = forgetlog.Open(jdir, kr); err != nil {
					return cli.Usage(err, "--forget-journal names a folder this user can write")
				}
				defer cfg.Journal.Close()
			}
			s, err := subject.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			for _, sub := range args {
				n, err := s.ForgetKeys(cmd.Context(), sub)
				if err != nil {
					return fmt.Errorf("forgetting %s/%s: %w", ns, sub, err)
				}
				if n == 0 {
					fmt.Fprintf(sc.a.stdout, "%s/%s forgotten: it held no key (no value was sealed for it); its tombstone keeps one from being created\n", ns, sub)
					continue
				}
				fmt.Fprintf(sc.a.stdout, "%s/%s forgotten: %d key versions deleted\n", ns, sub, n)
			}
			return nil
		},
	}
	forget.Flags().StringVar(&ns, "namespace", "", "the subjects' namespace (required)")
	forget.Flags().StringVar(&jdir, "forget-journal", "", "append each forget to this journal folder too (default $WARD_FORGET_JOURNAL)")
	return forget
}

// auditDoc is one namespace in 'ward subject audit --json' (docs/CLI.md).
type auditDoc struct {
	Namespace  string           `json:"namespace"`
	Tombstones int              `json:"tombstones"`
	Counted    uint64           `json:"counted"`
	ByKey      map[string]int64 `json:"by_key"`
	UserHeld   int64            `json:"user_held"`
	Lost       int64            `json:"lost"`
	Error      string           `json:"error,omitempty"`
	// With --forget-journal: the subjects the journals record as
	// forgotten, and those of them that hold a key or a session again
	// (by identity: each subject the database holds, looked up in the
	// journals).
	Journaled   *int     `json:"journaled,omitempty"`
	Resurrected []string `json:"resurrected,omitempty"`
}

func (sc *subjectCmds) audit() *cobra.Command {
	var asJSON bool
	var journals []string
	audit := &cobra.Command{
		Use:   "audit --db URL [--forget-journal DIR]...",
		Short: "Check tombstones against the ledger, count keys by what wraps them, and find forgotten subjects holding a key again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sc.withLedger(cmd, func(kr *keyring.Keyring, ls *ledgers, stores []*subject.Store) error {
				docs, bad, err := auditStores(cmd.Context(), stores)
				if err != nil {
					return err
				}
				back, err := resurrected(cmd.Context(), kr, ls, stores, journals, docs)
				if err != nil {
					return err
				}
				if asJSON {
					sc.a.writeJSON(docs)
				} else {
					sc.printAudit(docs)
				}
				if bad != nil {
					return cli.Failed(bad, "someone with write access to the database deleted or planted tombstones: a deleted one makes a forgotten subject look like a missing key; restore from a backup and find out who")
				}
				if back > 0 {
					return cli.Failed(fmt.Errorf("%d subjects the forget journals record as forgotten hold a key or a session again", back),
						"their forget was lost (the database went back in time) or their key rows were put back: run 'ward ledger recover --db URL --forget-journal DIR' if the ledger is refused, else 'ward subject forget' for each")
				}
				return nil
			})
		},
	}
	audit.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{namespace, tombstones, counted, by_key, user_held, lost, error, journaled, resurrected}]")
	audit.Flags().StringArrayVar(&journals, "forget-journal", nil, "a forget journal folder (repeatable): report, by identity, the subjects it records as forgotten that hold a key or a session again (exit 1)")
	return audit
}

// resurrected fills each namespace's journaled and resurrected subjects
// from the forget journals (none given: nothing) and returns how many
// subjects are back.
func resurrected(ctx context.Context, kr *keyring.Keyring, ls *ledgers, stores []*subject.Store, journals []string, docs []auditDoc) (int, error) {
	if len(journals) == 0 {
		return 0, nil
	}
	st, err := ls.l[0].Verified(ctx, kr)
	if err != nil || st == nil {
		return 0, err
	}
	records, err := forgetlog.Read(kr, st.Database, journals...)
	if err != nil {
		return 0, err
	}
	back := 0
	for i, s := range stores {
		tally := st.Tally(subject.ForgetCounter(s.Namespace()))
		records.Settle(s.Namespace(), tally, tally) // only forgets that committed
		n := records.Count(s.Namespace())
		docs[i].Journaled = &n
		forgotten, _, err := s.Journaled(ctx, records) // not the recycled IDs: new subjects'
		if err != nil {
			return 0, err
		}
		docs[i].Resurrected = append(docs[i].Resurrected, forgotten...)
		back += len(forgotten)
	}
	return back, nil
}

// auditStores audits every namespace; bad is the last tampering found.
func auditStores(ctx context.Context, stores []*subject.Store) (docs []auditDoc, bad, err error) {
	docs = []auditDoc{}
	for _, s := range stores {
		valid, counted, aerr := s.Audit(ctx)
		if aerr != nil && !errors.Is(aerr, subject.ErrTombstoneTampered) {
			return nil, nil, aerr
		}
		c, err := s.Census(ctx)
		if err != nil {
			return nil, nil, err
		}
		d := auditDoc{Namespace: s.Namespace(), Tombstones: valid, Counted: counted, ByKey: map[string]int64{}, UserHeld: c.UserHeld, Lost: c.Lost}
		for id, n := range c.ByKey {
			d.ByKey[id.String()] = n
		}
		if aerr != nil {
			d.Error, bad = aerr.Error(), aerr
		}
		docs = append(docs, d)
	}
	return docs, bad, nil
}

func (sc *subjectCmds) printAudit(docs []auditDoc) {
	if len(docs) == 0 {
		fmt.Fprintln(sc.a.stdout, "no subject keys in this database")
	}
	for _, d := range docs {
		fmt.Fprintf(sc.a.stdout, "%s: %d tombstones (ledger counts %d), keys: %s, %d user-held, %d lost\n", printable.String(d.Namespace), d.Tombstones, d.Counted, byKeyText(d.ByKey), d.UserHeld, d.Lost)
		if d.Error != "" {
			fmt.Fprintf(sc.a.stdout, "  %s\n", d.Error)
		}
		if d.Journaled != nil {
			fmt.Fprintf(sc.a.stdout, "  forget journals: %d subjects forgotten, %d of them hold a key or a session again%s\n", *d.Journaled, len(d.Resurrected), listed(d.Resurrected))
		}
	}
}

// reseal is 'ward subject reseal': every subject key wrapped again under
// the keyring's primary key.
func (sc *subjectCmds) reseal() *cobra.Command {
	var workers, batch int
	var shard string
	reseal := &cobra.Command{
		Use:   "reseal --db URL",
		Short: "Reseal every subject key under the keyring's primary key (resumable)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i, n, err := sc.a.parseShard(shard)
			if err != nil {
				return cli.Usage(err, "--shard is i/n with 0 <= i < n, such as 0/4")
			}
			kr, ls, err := sc.open(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			_, err = lifecycle.ResealSubjects(cmd.Context(), kr, ls.databases()[0], subject.ResealOptions{Workers: workers, Batch: batch, Shard: i, Shards: n}, lifecycle.Observer{
				Subjects: func(r lifecycle.SubjectResult, _ error) {
					st := r.Reseal
					fmt.Fprintf(sc.a.stdout, "%s: %d resealed under %v, %d already current, %d user-held (skipped: their users re-wrap at log-in), %d changed meanwhile (run again); in batches of %d by %d workers\n",
						r.Namespace, st.Resealed, kr.Primary().ID, st.Current, st.UserHeld, st.Conflicts, batch, workers)
				},
			})
			return interrupted(err)
		},
	}
	reseal.Flags().IntVar(&workers, "workers", 2, "key rows resealed in parallel")
	reseal.Flags().IntVar(&batch, "batch", 500, "key rows per transaction")
	reseal.Flags().StringVar(&shard, "shard", "", "this process's share of the subjects, i/n (run n processes with 0/n … n-1/n); /n takes i from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	return reseal
}

func (sc *subjectCmds) rekey() *cobra.Command {
	rekey := &cobra.Command{
		Use:   "rekey --db URL",
		Short: "Give every subject a new key version, and move their values to it (resumable)",
		Long: `Give every subject whose key the keyring wraps a new key version, then
re-seal the values of every column the ledger records as sealed per subject
under their subject's newest version. Private subjects keep their key (only
their users hold it) and are counted. Older versions stay, so nothing is
lost; run again after an interruption.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, ls, err := sc.open(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			_, _, err = lifecycle.RekeySubjects(cmd.Context(), kr, ls.databases()[0], sc.a.rekeyObserver())
			return interrupted(err)
		},
	}
	return rekey
}

// rekeyObserver prints what a re-key of subjects did.
func (a *app) rekeyObserver() lifecycle.Observer {
	return lifecycle.Observer{
		Subjects: func(r lifecycle.SubjectResult, _ error) {
			fmt.Fprintf(a.stdout, "%s: %d of %d subjects given a new key version, %d private (kept)\n", printable.String(r.Namespace), r.Rekey.Rotated, r.Rekey.Subjects, r.Rekey.UserHeld)
		},
		Column: func(c lifecycle.ColumnResult, _ error) {
			fmt.Fprintf(a.stdout, "%s.%s: %d re-sealed under their subject's newest key, %d already current, %d private skipped\n", c.Column.Table, c.Column.Column, c.Stats.Resealed, c.Stats.Current, c.Stats.UserHeld)
		},
	}
}

func byKeyText(m map[string]int64) string {
	if len(m) == 0 {
		return "none keyring-wrapped"
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d under %s", m[id], id))
	}
	return strings.Join(parts, ", ")
}
