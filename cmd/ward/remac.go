package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/lifecycle"
)

// newKeyringRemacCmd is 'ward keyring remac': a rotation's re-MAC pass on
// its own (lifecycle.RemacRows), to run again when the rotation's pass
// said v1 MACs are still accepted.
func (a *app) newKeyringRemacCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remac --db URL...",
		Short: "Move recorded row MACs to the current integrity epoch",
		Long: `Move every row MAC each database's ledger records (sessions, password rows)
to the current integrity epoch — the primary key's — row by row by
compare-and-swap, and, once the fleet has written v2 MACs for 10 s and no
v1 MAC is left, record in the ledger that v1 MACs of the table are refused
and that v1 fleet registry rows are. A rotation ('ward keyring rotate --db')
runs this pass itself; run it again when the rotation said "v1 MACs still
accepted". Then a key of an older epoch can be retired ('ward keyring
retire'), after which a copy of the keyring file from before forges no row
(SECURITY.md, actor 14). Rows whose MAC does not verify are counted as
invalid and left as they are. Safe to run while the application writes,
and to run again after an interruption.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(a.dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name the databases whose row MACs to move")
			}
			kr, ls, err := a.keyringLedgers(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			for _, d := range ls.databases() {
				res, err := lifecycle.RemacRows(cmd.Context(), kr, d)
				for _, m := range res {
					a.printMACs(m)
				}
				if err != nil {
					return interrupted(fmt.Errorf("%s: %w", d.Name, err))
				}
				if len(res) == 0 {
					fmt.Fprintf(a.stdout, "%s: the ledger records no row-MAC column\n", d.Name)
				}
			}
			return nil
		},
	}
}

// printMACs prints what a re-MAC pass did to one column.
func (a *app) printMACs(m lifecycle.MACResult) { fmt.Fprintln(a.stdout, m) }
