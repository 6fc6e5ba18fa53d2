package main

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
)

// reportUsage adds the values this command sealed to the first
// database's key-usage table (fleet.Usage: a count per key, summed over
// every process), and warns of a key due for rotation. A failure is a
// warning: the count is advisory, and the work it counts is done.
func (a *app) reportUsage(ctx context.Context, kr *keyring.Keyring, ls *ledgers) {
	if len(ls.l) == 0 {
		return
	}
	totals, err := (&fleet.Usage{DB: ls.dbs[0], Dialect: ls.l[0].Dialect}).Report(ctx, kr)
	if err != nil {
		fmt.Fprintf(a.stderr, "ward: warning: the key-usage count was not recorded: %v\n", err)
		return
	}
	a.warnDue(totals)
}

// warnDue prints the warning of every key due for rotation.
func (a *app) warnDue(totals []fleet.KeyUsage) {
	for _, k := range totals {
		if w := k.Warning(); w != "" {
			fmt.Fprintf(a.stderr, "ward: warning: %s\n", w)
		}
	}
}

// keyUsage sums the key-usage tables of the databases of --db (each
// process reports to one of them), by key ID; nil without --db.
func (a *app) keyUsage(ctx context.Context, kr *keyring.Keyring) (map[keyring.KeyID]uint64, error) {
	if len(a.dbs) == 0 {
		return nil, nil
	}
	ls, err := openLedgers(a.dbs)
	if err != nil {
		return nil, err
	}
	defer ls.close()
	sum := map[keyring.KeyID]uint64{}
	for i, db := range ls.dbs {
		got, err := (&fleet.Usage{DB: db, Dialect: ls.l[i].Dialect}).Read(ctx, kr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ls.urls[i], err)
		}
		for _, k := range got {
			sum[k.Key] += k.Seals
		}
	}
	var totals []fleet.KeyUsage
	for _, k := range kr.Keys() {
		totals = append(totals, fleet.KeyUsage{Key: k.ID, Algorithm: k.Algorithm, Seals: sum[k.ID]})
	}
	a.warnDue(totals)
	return sum, nil
}
