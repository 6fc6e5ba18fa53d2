package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/lifecycle"
)

// recoverOptions are the flags of 'ward ledger recover'.
type recoverOptions struct {
	db         string
	journals   []string
	acceptLoss bool
	yes        bool
	asJSON     bool
}

func (a *app) newLedgerRecoverCmd() *cobra.Command {
	var o recoverOptions
	cmd := &cobra.Command{
		Use:   "recover --db URL [--forget-journal DIR]...",
		Short: "Bring a database back after it went back in time (a lossy failover, a restore)",
		Long: `Bring back a database whose ledger is older than the keyring file's anchor
(every check then fails with "an older copy of the ledger was put back"):
after a failover that lost its last commits, a restore from backup, or a
database writer's rollback — they look alike, so nothing the anchor proves
is given up. Opening the keyring (its master key or KMS) authenticates the
operator.

It prints what the anchor proves was lost (the ledger writes, marks, keys
and forgets), forgets again every subject the forget journals record that
holds a key again, lists the columns whose values may have gone back to an
older form (run 'ward encrypt-column --check' or 'ward reseal --check' on
each: a census that finds it done clears it), asks for confirmation, then
re-anchors the ledger: a key retired since stays retired, a key the keyring
holds is recorded, no mark is dropped, and the recovery is recorded.

Exit 1, writing nothing, when something cannot be restored: forgets the
anchor counts that no journal records (those users' keys and data are
back), or values under a key retired since. --accept-loss brings the service
back anyway. Safe to run again: each step is idempotent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.recoverLedger(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "the database")
	f.StringArrayVar(&o.journals, "forget-journal", nil, "a forget journal folder (repeatable: every instance's, if each keeps its own)")
	f.BoolVar(&o.acceptLoss, "accept-loss", false, "finish although forgets or values cannot be restored (they are named first)")
	f.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	f.BoolVar(&o.asJSON, "json", false, "print the plan and what was done as JSON (schema in docs/CLI.md); give --yes too, or answer the prompt on stdin")
	return cmd
}

// recoveryReport is what --json prints.
type recoveryReport struct {
	DB        string                 `json:"db"`
	Plan      lifecycle.RecoveryPlan `json:"plan"`
	Recovered bool                   `json:"recovered"`
	Reapplied int                    `json:"reapplied"`
}

func (a *app) recoverLedger(cmd *cobra.Command, o recoverOptions) error {
	if o.db == "" {
		return cli.Usage(errors.New("--db is required"), "name the database to recover")
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
	name := dburl.Redact(o.db)
	if len(o.journals) == 0 && !o.asJSON {
		fmt.Fprintln(a.stderr, "ward: no --forget-journal given: forgets the database lost cannot be re-applied")
	}
	opts := lifecycle.RecoverOptions{Journals: o.journals, AcceptLoss: o.acceptLoss, Confirm: func(p lifecycle.RecoveryPlan) bool {
		if !o.asJSON {
			a.printPlan(name, p)
		}
		return o.yes || a.confirm("type 'recover' to re-anchor the ledger: ", "recover")
	}}
	r, err := lifecycle.Recover(cmd.Context(), kr, lifecycle.Database{Name: name, DB: db, Dialect: dialect}, opts)
	if o.asJSON {
		if jerr := a.writeJSON(recoveryReport{DB: name, Plan: r.Plan, Recovered: r.State != nil, Reapplied: r.Reapplied}); jerr != nil {
			return jerr
		}
	}
	switch {
	case errors.Is(err, lifecycle.ErrUnrecoverable):
		if !o.asJSON {
			a.printPlan(name, r.Plan)
		}
		return cli.Failed(err, "give every forget journal folder (--forget-journal); or run with --accept-loss to bring the service back knowing what is lost")
	case errors.Is(err, lifecycle.ErrNotConfirmed):
		return cli.Failed(err, "nothing was written")
	case err != nil:
		return err
	}
	if !o.asJSON {
		a.printRecovered(name, r)
	}
	return nil
}

// confirm asks on stdin for a word.
func (a *app) confirm(prompt, word string) bool {
	fmt.Fprint(a.stderr, prompt)
	line, err := bufio.NewReader(io.LimitReader(a.stdin, 256)).ReadString('\n')
	return (err == nil || errors.Is(err, io.EOF)) && strings.TrimSpace(line) == word
}

func (a *app) printPlan(name string, p lifecycle.RecoveryPlan) {
	w := a.stdout
	b := p.Behind
	fmt.Fprintf(w, "%s (database %s):\n", name, printable.String(p.Database))
	fmt.Fprintf(w, "  the ledger is %d writes behind the keyring file's anchor\n", b.Writes)
	if len(b.Marks) > 0 {
		fmt.Fprintf(w, "  marks lost, restored: %s\n", printable.String(strings.Join(b.Marks, ", ")))
	}
	for _, id := range b.Retired {
		fmt.Fprintf(w, "  key %v was retired since: recorded as retired again\n", id)
	}
	for _, id := range b.Added {
		fmt.Fprintf(w, "  key %v is in the keyring, not in the ledger: recorded\n", id)
	}
	if p.JournalFiles > 0 || p.JournalInvalid > 0 {
		fmt.Fprintf(w, "  forget journals: %d files, %d records refused (torn or failing their MAC), %d of other databases\n", p.JournalFiles, p.JournalInvalid, p.JournalOther)
	}
	for _, ns := range p.Namespaces {
		fmt.Fprintf(w, "  %s: the anchor counts %d forgets, the ledger %d; %d tombstones; %d journaled; %d to forget again; %d lost\n",
			printable.String(ns.Namespace), ns.Anchored, ns.Counted, ns.Tombstones, ns.Journaled, ns.Reapply, ns.Lost)
		if ns.Recycled > 0 {
			fmt.Fprintf(w, "  %s: %d journaled IDs belong to new subjects (keys created after the forget): kept\n", printable.String(ns.Namespace), ns.Recycled)
		}
		printSettlement(w, ns)
	}
	if p.JobLocks > 0 {
		fmt.Fprintf(w, "  %d job locks from before (jobs that ran against the lost copy): released, so the jobs can run again\n", p.JobLocks)
	}
	for _, r := range p.Unopenable {
		fmt.Fprintf(w, "  cannot open again: %s\n", printable.String(r.What))
	}
	for _, c := range p.Recheck {
		fmt.Fprintf(w, "  %s may hold older values: run its census again (--check)\n", printable.String(c))
	}
}

// printSettlement says how a namespace's journal records were told apart.
func printSettlement(w io.Writer, ns lifecycle.NamespacePlan) {
	st, name := ns.Settlement, printable.String(ns.Namespace)
	switch {
	case !st.ByIdentity:
		fmt.Fprintf(w, "  %s: forgets counted, not named (the ledger went back to before its tally began)\n", name)
	case st.Committed+st.Unsure+st.Uncommitted > 0:
		fmt.Fprintf(w, "  %s: by identity, %d journal records of forgets that committed, %d that may have, %d that did not (ignored)\n", name, st.Committed, st.Unsure, st.Uncommitted)
	}
}

func (a *app) printRecovered(name string, r lifecycle.Recovered) {
	if r.State == nil {
		fmt.Fprintf(a.stdout, "%s: nothing to recover (the ledger matches its anchor, no journaled subject holds a key)\n", name)
		return
	}
	fmt.Fprintf(a.stdout, "%s: recovered: %d subjects forgotten again, ledger at counter %d, anchored; %d columns to check again%s\n",
		name, r.Reapplied, r.State.Counter, len(r.State.Recheck), listed(r.State.Recheck))
	for _, c := range r.State.Recheck {
		fmt.Fprintf(a.stdout, "  %s: %s\n", printable.String(c), checkCommand(name, r.State, c))
	}
}

// listed is ": a, b, c" for names (escaped for the terminal), "" for none.
func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = printable.String(n)
	}
	return ": " + strings.Join(out, ", ")
}
