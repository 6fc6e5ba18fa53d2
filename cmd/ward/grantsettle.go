package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// settlePending settles each pending grant (ledger.Grant.Pending) whose
// command is no longer at work on its file (no lock held on it): promoted
// in every ledger if the file holds it (its header names it), dropped from
// every ledger if the file was never written (an empty file, taken by the
// command, is removed with it). A grant whose file's folder is not on this
// machine stays pending: only the machine that issued it can tell.
func (a *app) settlePending(ctx context.Context, kr *keyring.Keyring, ls *ledgers) error {
	seen := map[string]bool{}
	for _, l := range ls.l {
		st, err := l.Verified(ctx, kr)
		if err != nil {
			return err
		}
		for _, g := range stateGrants(st) {
			if !g.Pending || seen[g.ID] {
				continue
			}
			seen[g.ID] = true
			if err := a.settle(ctx, kr, ls, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// settle settles one pending grant g (settlePending).
func (a *app) settle(ctx context.Context, kr *keyring.Keyring, ls *ledgers, g ledger.Grant) error {
	if _, err := os.Stat(filepath.Dir(g.Out)); g.Out == "" || err != nil {
		fmt.Fprintf(a.stderr, "ward: grant %s is pending: its file %q is not on this machine; run a grant command where it was issued\n", g.ID, g.Out)
		return nil
	}
	if inUse(g.Out) { // its command is still writing it
		return nil
	}
	if grantFileID(g.Out) == g.ID {
		if err := ls.eachGrant("promoting", g.ID, func(l *ledger.Ledger) error { return l.PromoteGrant(ctx, kr, g.ID) }); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "ward: grant %s: its file %s holds it: live\n", g.ID, g.Out)
		return nil
	}
	if fi, err := os.Stat(g.Out); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		os.Remove(g.Out)
	}
	if err := dropEverywhere(ctx, kr, ls, g.ID); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "ward: grant %s was never written to %s (the command that issued it stopped): dropped, nobody holds it\n", g.ID, g.Out)
	return nil
}

// dropEverywhere removes pending grant id's record from every ledger.
func dropEverywhere(ctx context.Context, kr *keyring.Keyring, ls *ledgers, id string) error {
	if err := ls.eachGrant("dropping the file-less", id, func(l *ledger.Ledger) error { return l.DropGrant(ctx, kr, id) }); err != nil {
		return cli.Failed(err, "the next 'ward grant list --db URL…' on this machine settles it")
	}
	return nil
}

// finishEverywhere records in every ledger that revoked grant id needs
// nothing more.
func finishEverywhere(ctx context.Context, kr *keyring.Keyring, ls *ledgers, id string) error {
	return ls.eachGrant("finishing the revocation of", id, func(l *ledger.Ledger) error { return l.FinishRevocation(ctx, kr, id, time.Now()) })
}

// eachGrant applies fn, a change of grant id's record, to every ledger;
// a ledger that does not record the grant is passed over. An error names
// the database and what was done ("revoking" grant id).
func (ls *ledgers) eachGrant(what, id string, fn func(l *ledger.Ledger) error) error {
	for i, l := range ls.l {
		if err := fn(l); err != nil && !errors.Is(err, ledger.ErrUnknownGrant) {
			return fmt.Errorf("%s: %s grant %s: %w", dburl.Redact(ls.urls[i]), what, id, err)
		}
	}
	return nil
}
