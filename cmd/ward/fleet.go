package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/dburl"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// fleetRotation are the options of 'ward keyring rotate'.
type fleetRotation struct {
	offline     bool
	staleAfter  time.Duration
	wait        time.Duration
	skip        []string
	noReencrypt bool
}

// rotateFleet adds a key, waits for every registered process to hold it,
// promotes it, waits for every process to load the promotion, and
// re-encrypts the columns the ledgers record.
func (a *app) rotateFleet(cmd *cobra.Command, kr *keyring.Keyring, alg keyring.Algorithm, o fleetRotation) error {
	ctx := cmd.Context()
	ls, err := openCheckedLedgers(ctx, a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	// An added key not yet promoted (a rotation that stopped while
	// waiting) is reused, so that running the command again continues.
	var id keyring.KeyID
	for _, k := range kr.Keys() {
		if k.State == keyring.DecryptOnly && k.Created.After(kr.Primary().Created) {
			id = k.ID
		}
	}
	if id == 0 {
		if id, err = kr.Add(ctx, alg); err != nil {
			return saveError(err)
		}
		fmt.Fprintf(a.stdout, "added key %v (decrypt-only)\n", id)
	} else {
		fmt.Fprintf(a.stdout, "continuing with key %v (decrypt-only, added earlier)\n", id)
	}
	if err := ls.record(ctx, kr, id); err != nil {
		return err
	}
	if err := a.awaitFleet(ctx, ls, kr, o, "hold key "+id.String(), func(p fleet.Process) bool { return p.Has(id) }); err != nil {
		return err
	}
	old := kr.Primary().ID
	if err := kr.Promote(ctx, id); err != nil {
		return saveError(err)
	}
	promoted := kr.Generation()
	if err := ls.record(ctx, kr, id); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "promoted %v; %v is decrypt-only\n", id, old)
	if err := a.awaitFleet(ctx, ls, kr, o, fmt.Sprintf("load the promotion (generation %d)", promoted), func(p fleet.Process) bool {
		return p.Generation >= promoted
	}); err != nil {
		return err
	}
	if o.noReencrypt {
		fmt.Fprintln(a.stdout, "not re-encrypting (--no-reencrypt): run 'ward rotate' on each column")
		return nil
	}
	for i, l := range ls.l {
		st, err := l.Read(ctx)
		if err != nil {
			return err
		}
		if st == nil || len(st.Columns) == 0 {
			fmt.Fprintf(a.stdout, "%s: the ledger records no columns: run 'ward rotate' on each\n", dburl.Redact(ls.urls[i]))
			continue
		}
		for _, c := range st.Columns {
			if c.Kind == ledger.KindPasswordHash {
				fmt.Fprintf(a.stdout, "%s.%s: password hashes move to the new pepper as their users log in\n", c.Table, c.Column)
				continue
			}
			col, err := recordedColumn(ctx, kr, ls.dbs[i], l, c)
			if err != nil {
				return err
			}
			job := &reseal.Job{DB: ls.dbs[i], Dialect: l.Dialect, Column: col, Key: c.Key}
			res, err := job.Run(ctx)
			fmt.Fprintf(a.stdout, "%s.%s: %d re-encrypted under %v, %d already current, %d failed\n", c.Table, c.Column, res.Reencrypted, id, res.Current, res.Failed)
			if err != nil {
				return interrupted(fmt.Errorf("re-encrypting %s.%s: %w", c.Table, c.Column, err))
			}
		}
		stores, err := subjectStores(ctx, kr, ls.dbs[i], l)
		if err != nil {
			return err
		}
		for _, s := range stores {
			res, err := s.Rewrap(ctx, subject.RewrapOptions{Workers: 2})
			fmt.Fprintf(a.stdout, "subject keys of %s: %d re-wrapped under %v, %d already current, %d user-held (under no keyring key)\n", s.Namespace(), res.Rewrapped, id, res.Current, res.UserHeld)
			if err != nil {
				return interrupted(fmt.Errorf("re-wrapping the subject keys of %s: %w", s.Namespace(), err))
			}
		}
	}
	return nil
}

// awaitFleet waits, in every database, for every registered process to
// satisfy ready, printing who it waits for every few seconds.
func (a *app) awaitFleet(ctx context.Context, ls *ledgers, kr *keyring.Keyring, o fleetRotation, what string, ready func(fleet.Process) bool) error {
	ctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	for i, l := range ls.l {
		reg := &fleet.Registry{DB: ls.dbs[i], Dialect: l.Dialect}
		var last time.Time
		res, err := reg.Await(ctx, kr, ready, fleet.WaitOptions{StaleAfter: o.staleAfter, Skip: o.skip, Progress: func(w []fleet.Process) {
			if len(w) > 0 && time.Since(last) > 5*time.Second {
				last = time.Now()
				names := make([]string, len(w))
				for i, p := range w {
					names[i] = p.String()
				}
				fmt.Fprintf(a.stderr, "ward: %s: waiting for %d processes to %s: %s\n", dburl.Redact(ls.urls[i]), len(w), what, strings.Join(names, ", "))
			}
		}})
		var nr *fleet.NotReadyError
		if errors.As(err, &nr) {
			if errors.Is(err, context.Canceled) { // Ctrl-C, not --wait
				return interrupted(context.Canceled)
			}
			return cli.Failed(fmt.Errorf("%s: %w", dburl.Redact(ls.urls[i]), err),
				"a frozen or lost process: wait until its heartbeat is older than --stale-after, or name it with --skip (it may seal under the old key until it reloads); then run the command again, which continues")
		}
		if err != nil {
			return err
		}
		for _, p := range res.Stale {
			fmt.Fprintf(a.stderr, "ward: warning: %v last reported %v ago and no longer blocks: if it resumes, it re-reads the keyring file when it meets the new key\n", p, time.Since(p.Seen).Round(time.Second))
		}
		for _, p := range res.Skipped {
			fmt.Fprintf(a.stderr, "ward: warning: skipped %v (--skip): until it reloads, it cannot open values under the new key without re-reading the file, and may seal under the old one\n", p)
		}
		fmt.Fprintf(a.stdout, "%s: %d processes ready to %s (%d stale, %d skipped, %d exited)\n", dburl.Redact(ls.urls[i]), len(res.Ready), what, len(res.Stale), len(res.Skipped), len(res.Exited))
	}
	return nil
}

func (a *app) newFleetCmd() *cobra.Command {
	var dbs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fleet --db URL...",
		Short: "List the processes registered in each database, and the keys each holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name each database")
			}
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			type report struct {
				DB        string          `json:"db"`
				Processes []fleet.Process `json:"processes"`
			}
			var out []report
			for _, u := range dbs {
				db, dialect, err := openDB(u)
				if err != nil {
					return err
				}
				ps, err := (&fleet.Registry{DB: db, Dialect: dialect}).List(cmd.Context(), kr)
				db.Close()
				if err != nil {
					return err
				}
				out = append(out, report{DB: dburl.Redact(u), Processes: ps})
			}
			if asJSON {
				return a.writeJSON(out)
			}
			for _, r := range out {
				fmt.Fprintf(a.stdout, "%s:\n", r.DB)
				for _, p := range r.Processes {
					state := "running"
					switch {
					case p.Tampered:
						state = "ROW FAILS ITS MAC"
					case p.Exited:
						state = "exited"
					}
					fmt.Fprintf(a.stdout, "  %v generation %d keys %v, seen %v ago, %s\n", p, p.Generation, p.Keys, time.Since(p.Seen).Round(time.Second), state)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dbs, "db", nil, "a database (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{db, processes: [{id, host, pid, keyring, generation, keys, started, seen, exited, tampered}]}]")
	return cmd
}
