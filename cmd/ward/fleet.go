package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// fleetRotation are the options of 'ward keyring rotate'.
type fleetRotation struct {
	offline    bool
	staleAfter time.Duration
	wait       time.Duration
	skip       []string
	noReseal   bool
}

// databases are the ledgers' databases as the lifecycle calls take them,
// each named by its redacted URL.
func (ls *ledgers) databases() []lifecycle.Database {
	out := make([]lifecycle.Database, len(ls.l))
	for i, l := range ls.l {
		out[i] = lifecycle.Database{Name: dburl.Redact(ls.urls[i]), DB: ls.dbs[i], Dialect: l.Dialect, Ledger: l}
	}
	return out
}

// rotateFleet runs lifecycle.Rotate over the databases given with --db,
// printing each step.
func (a *app) rotateFleet(cmd *cobra.Command, kr *keyring.Keyring, alg keyring.Algorithm, o fleetRotation) error {
	ls, err := openCheckedLedgers(cmd.Context(), a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	obs := a.rotationObserver(kr)
	// Grants re-issued to their key services as soon as the new key is
	// primary, before the columns move to it (grantsAfterRotation).
	var grantsErr error
	reissued := false
	promoted := obs.Promoted
	obs.Promoted = func(id, old keyring.KeyID) {
		promoted(id, old)
		grantsErr, reissued = a.grantsAfterRotation(cmd.Context(), kr, ls, id), true
	}
	restoreGC := a.jobGC() // the rotation re-encrypts its columns
	r, err := lifecycle.Rotate(cmd.Context(), kr, ls.databases(), lifecycle.RotateOptions{
		Algorithm: alg, Wait: o.wait, NoReseal: o.noReseal, Observer: obs,
		Fleet: fleet.WaitOptions{StaleAfter: o.staleAfter, Skip: o.skip},
	})
	restoreGC()
	a.reportUsage(cmd.Context(), kr, ls)
	var nr *fleet.NotReadyError
	switch {
	case errors.As(err, &nr) && errors.Is(err, context.Canceled): // Ctrl-C, not --wait
		return interrupted(context.Canceled)
	case errors.As(err, &nr):
		return cli.Failed(err, "a frozen or lost process: wait until its heartbeat is older than --stale-after, or name it with --skip (it may seal under the old key until it reloads); then run the command again, which continues")
	case err != nil && !r.Promoted:
		return saveError(err)
	case err != nil:
		return interrupted(err)
	}
	if !reissued { // a rotation continued past its promotion
		grantsErr = a.grantsAfterRotation(cmd.Context(), kr, ls, r.Key)
	}
	if o.noReseal {
		fmt.Fprintln(a.stdout, "not resealing (--no-reseal): run 'ward reseal' on each column and 'ward subject reseal'")
		return grantsErr
	}
	// As the columns moved to the new key, so do the wraps grants of
	// per-subject columns open: a grant of the older keys only opens none.
	if err := refreshGrantWraps(cmd.Context(), a.stdout, kr, ls, nil, true); err != nil {
		return err
	}
	return grantsErr
}

// rotationObserver prints the steps of a rotation: progress and warnings
// on stderr, results on stdout.
func (a *app) rotationObserver(kr *keyring.Keyring) lifecycle.Observer {
	var last time.Time
	var key keyring.KeyID
	return lifecycle.Observer{
		Added: func(id keyring.KeyID, continued bool) {
			key = id
			if continued {
				fmt.Fprintf(a.stdout, "continuing with key %v (decrypt-only, added earlier)\n", id)
			} else {
				fmt.Fprintf(a.stdout, "added key %v (decrypt-only)\n", id)
			}
		},
		Waiting: func(db, what string, w []fleet.Process) {
			if len(w) > 0 && time.Since(last) > 5*time.Second {
				last = time.Now()
				fmt.Fprintf(a.stderr, "ward: %s: waiting for %d processes to %s: %s\n", db, len(w), what, processNames(w))
			}
		},
		Ready: func(db, what string, res fleet.Awaited) {
			for _, p := range res.Stale {
				fmt.Fprintf(a.stderr, "ward: warning: %v last reported %v ago and no longer blocks: if it resumes, it re-reads the keyring file when it meets the new key\n", p, time.Since(p.Seen).Round(time.Second))
			}
			for _, p := range res.Skipped {
				fmt.Fprintf(a.stderr, "ward: warning: skipped %v (--skip): until it reloads, it cannot open values under the new key without re-reading the file, and may seal under the old one\n", p)
			}
			fmt.Fprintf(a.stdout, "%s: %d processes ready to %s (%d stale, %d skipped, %d exited)\n", db, len(res.Ready), what, len(res.Stale), len(res.Skipped), len(res.Exited))
		},
		Promoted: func(id, old keyring.KeyID) { fmt.Fprintf(a.stdout, "promoted %v; %v is decrypt-only\n", id, old) },
		Column: func(c lifecycle.ColumnResult, _ error) {
			fmt.Fprintf(a.stdout, "%s.%s: %d resealed under %v, %d already current, %d failed\n", c.Column.Table, c.Column.Column, c.Stats.Resealed, key, c.Stats.Current, c.Stats.Failed)
		},
		Subjects: func(s lifecycle.SubjectResult, _ error) {
			fmt.Fprintf(a.stdout, "subject keys of %s: %d resealed under %v, %d already current, %d user-held (under no keyring key)\n", s.Namespace, s.Reseal.Resealed, key, s.Reseal.Current, s.Reseal.UserHeld)
		},
		MACs: func(m lifecycle.MACResult, _ error) { a.printMACs(m) },
		Skipped: func(db string, c ledger.Column, why string) {
			if c.Table == "" {
				fmt.Fprintf(a.stdout, "%s: %s: run 'ward reseal' on each\n", db, why)
				return
			}
			fmt.Fprintf(a.stdout, "%s.%s: %s\n", c.Table, c.Column, why)
		},
	}
}

// processNames lists processes for a message.
func processNames(ps []fleet.Process) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

// fleetReport is one database's registry and forms, as ward fleet shows
// them.
type fleetReport struct {
	DB        string           `json:"db"`
	Processes []fleet.Process  `json:"processes"`
	Forms     []ledger.Form    `json:"forms,omitempty"`
	Skipped   []fleetgate.Form `json:"skipped,omitempty"`
	Expect    int              `json:"expect,omitempty"`
}

func (a *app) newFleetCmd() *cobra.Command {
	var dbs, skip []string
	var asJSON bool
	expect := -1
	cmd := &cobra.Command{
		Use:   "fleet --db URL...",
		Short: "List the processes registered in each database, the keys each holds, and the forms the fleet waits for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name each database")
			}
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			var out []fleetReport
			for _, u := range dbs {
				r, err := readFleet(cmd.Context(), u, kr, skip, expect)
				if err != nil {
					return err
				}
				out = append(out, r)
			}
			if asJSON {
				return a.writeJSON(out)
			}
			for _, r := range out {
				a.printFleet(r)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dbs, "db", nil, "a database (repeatable)")
	cmd.Flags().StringArrayVar(&skip, "skip-form", nil, "let every form still waiting open without this process (ID or host:pid; repeatable): it will never read one again (killed, host gone)")
	cmd.Flags().IntVar(&expect, "expect", -1, "record that the fleet runs this many processes (0 clears): a form then opens only once that many live processes read it, for a fleet whose older processes never registered")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{db, processes: [{id, host, pid, keyring, generation, keys, started, seen, exited, tampered, forms}], forms: [{name, release, since, waiting, skipped, opened}], skipped, expect}]")
	return cmd
}

// readFleet reads one database's registry and forms, first letting the
// forms waiting for the processes in skip go without them.
func readFleet(ctx context.Context, u string, kr *keyring.Keyring, skip []string, expect int) (fleetReport, error) {
	db, dialect, err := openDB(u)
	if err != nil {
		return fleetReport{}, err
	}
	defer db.Close()
	reg := &fleet.Registry{DB: db, Dialect: dialect}
	r := fleetReport{DB: dburl.Redact(u)}
	if len(skip) > 0 {
		r.Skipped, err = reg.SkipForms(ctx, kr, skip)
		var unknown *fleet.UnknownProcessError
		if errors.As(err, &unknown) {
			return r, cli.Usage(err, "name a process as 'ward fleet' lists it (its ID, or host:pid), or as a form's wait names it")
		}
		if err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
			return r, err
		}
	}
	if expect >= 0 {
		if err := (&ledger.Ledger{DB: db, Dialect: dialect}).SetExpect(ctx, kr, expect); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
			return r, err
		}
	}
	if r.Processes, err = reg.List(ctx, kr); err != nil {
		return r, err
	}
	if r.Processes == nil {
		r.Processes = []fleet.Process{} // JSON: [], not null
	}
	st, err := (&ledger.Ledger{DB: db, Dialect: dialect}).Verified(ctx, kr)
	if err != nil || st == nil {
		return r, err
	}
	r.Forms, r.Expect = st.Forms, st.Expect
	return r, nil
}

// printFleet writes one database's report for a person.
func (a *app) printFleet(r fleetReport) {
	fmt.Fprintf(a.stdout, "%s:\n", r.DB)
	if len(r.Processes) == 0 {
		fmt.Fprintln(a.stdout, "  no process has registered (a service registers with fleet.Registry.Join)")
	}
	for _, p := range r.Processes {
		state := "running"
		switch {
		case p.Tampered:
			state = "ROW FAILS ITS MAC"
		case p.Exited:
			state = "exited"
		}
		fmt.Fprintf(a.stdout, "  %v generation %d keys %v, reads %d forms, seen %v ago, %s\n", p, p.Generation, p.Keys, len(p.Forms), time.Since(p.Seen).Round(time.Second), state)
	}
	if r.Expect > 0 {
		fmt.Fprintf(a.stdout, "  the fleet runs %d processes (--expect): a form opens once that many read it\n", r.Expect)
	}
	for _, f := range r.Skipped {
		fmt.Fprintf(a.stdout, "  form %s: the named processes skipped\n", f)
	}
	for _, f := range r.Forms {
		switch {
		case f.IsOpen():
			fmt.Fprintf(a.stdout, "  form %s: open since %s (introduced in %s)\n", f.Name, time.UnixMilli(f.Opened).UTC().Format(time.RFC3339), f.Release)
		case len(f.Skipped) > 0:
			fmt.Fprintf(a.stdout, "  form %s: waiting since %s for %s (skipped: %s)\n", f.Name, time.UnixMilli(f.Since).UTC().Format(time.RFC3339),
				strings.Join(f.Waiting, ", "), strings.Join(f.Skipped, ", "))
		default:
			fmt.Fprintf(a.stdout, "  form %s: waiting since %s for %s\n", f.Name, time.UnixMilli(f.Since).UTC().Format(time.RFC3339), strings.Join(f.Waiting, ", "))
		}
	}
}
