package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// Re-issuing grants.
//
// A grant is keys derived from the keyring keys of its day, so after a
// rotation its reader opens no value sealed under the new primary. A grant
// sealed under a key service the operator can encrypt to (ward grant --to
// a KMS key URL) is re-issued: a new grant of the same scopes, with the
// new primary's keys added (or, when a key is retired, that key's taken
// away), sealed under the same key service and put in place of the old
// file; the ledger records it as replacing the old grant, which is then
// revoked. A grant under a reader's master key is not: only its reader
// holds that key, and the rotation says which such grants open nothing new.
//
// Each step can be interrupted and the next run (the rotation again, or
// 'ward grant reissue') finishes it by identity: the new file is written
// beside the old one under the new grant's ID, recorded, then renamed over
// the old file; a recorded successor whose file is neither in place (its
// header names it) nor beside it never reached its reader, and is revoked
// and issued again.

// grantTo returns what the ledger records of --to for re-issue: the URL
// of a key service other than a local master key, without credentials in
// it; "" when the grant cannot be re-issued by the operator.
func grantTo(to string) string {
	u, err := url.Parse(to)
	if to == "" || err != nil || u.Scheme == "local" || u.User != nil {
		return ""
	}
	return to
}

// reissuable reports whether a grant's record says where its reader's key
// service is and where its file goes.
func reissuable(g ledger.Grant) bool { return g.Live() && !g.Pending && g.To != "" && g.Out != "" }

// grantsAfterRotation re-issues, after a rotation to primary, every live
// re-issuable grant that holds no key of primary, with primary's keys
// added; of every other such grant it says that its reader opens no value
// sealed from now on.
func (a *app) grantsAfterRotation(ctx context.Context, kr *keyring.Keyring, ls *ledgers, primary keyring.KeyID) error {
	var errs []error
	seen := map[string]bool{}
	for i, l := range ls.l {
		st, err := l.Verified(ctx, kr)
		if err != nil || st == nil {
			continue
		}
		for _, g := range st.Grants {
			if !g.Live() || g.Pending || slices.Contains(g.Keys, primary) || seen[g.ID] {
				continue
			}
			seen[g.ID] = true
			if !reissuable(g) {
				fmt.Fprintf(a.stdout, "%s: grant %s (%s) opens no value sealed from now on: give its reader a new grant (ward grant --scope %s); until the column is re-sealed, and in backups, it still opens the values under its keys\n",
					dburl.Redact(ls.urls[i]), g.ID, strings.Join(g.Scopes, ", "), strings.Join(g.Scopes, " --scope "))
				continue
			}
			keys := slices.DeleteFunc(slices.Clone(g.Keys), func(id keyring.KeyID) bool {
				k, ok := kr.Lookup(id)
				return !ok || k.State == keyring.Disabled
			})
			if err := a.reissue(ctx, kr, ls, st, g, append(keys, primary)); err != nil {
				errs = append(errs, fmt.Errorf("re-issuing grant %s: %w", g.ID, err))
			}
		}
	}
	if len(errs) > 0 {
		return cli.Failed(errors.Join(errs...), "run 'ward grant reissue --db URL…' where the grant files are written: it finishes what was interrupted")
	}
	return nil
}

// reissue replaces grant old by a grant of the same scopes under keys,
// sealed under old's key service and put in old's file, then revokes old;
// a successor an interrupted run recorded is finished, or revoked and
// issued again if its file never reached its place.
func (a *app) reissue(ctx context.Context, kr *keyring.Keyring, ls *ledgers, st *ledger.State, old ledger.Grant, keys []keyring.KeyID) error {
	var next *ledger.Grant
	for _, g := range st.Grants {
		if g.Replaces == old.ID && g.Live() {
			next = &g
			break
		}
	}
	if next != nil {
		placed, err := placePending(*next)
		if err != nil {
			return err
		}
		if !placed { // recorded, but its file never reached its place
			if err := revokeEverywhere(ctx, kr, ls, next.ID); err != nil {
				return err
			}
			next = nil
		}
	}
	if next == nil {
		rec, err := a.issueSuccessor(ctx, kr, ls, old, keys)
		if err != nil {
			return err
		}
		next = &rec
	}
	if err := revokeEverywhere(ctx, kr, ls, old.ID); err != nil {
		return err
	}
	if err := finishEverywhere(ctx, kr, ls, old.ID); err != nil { // its re-issue carries its line
		return err
	}
	// Files an interrupted run wrote but never recorded: no ledger knows
	// their grants, and the one in place replaces them.
	if orphans, err := filepath.Glob(globEscape(old.Out) + ".reissue-*"); err == nil {
		for _, f := range orphans {
			os.Remove(f)
		}
	}
	fmt.Fprintf(a.stdout, "grant %s re-issued as %s: opens %s under keys %v, sealed under %s, written to %s; %s is revoked\n",
		old.ID, next.ID, strings.Join(next.Scopes, ", "), next.Keys, old.To, old.Out, old.ID)
	return nil
}

// issueSuccessor issues the grant that replaces old, writes its file
// beside old's, records it, and renames it into old's place.
func (a *app) issueSuccessor(ctx context.Context, kr *keyring.Keyring, ls *ledgers, old ledger.Grant, keys []keyring.KeyID) (ledger.Grant, error) {
	var scopes []keyring.GrantScope
	for _, s := range old.Scopes {
		sc, err := keyring.ParseGrantScope(s)
		if err != nil {
			return ledger.Grant{}, err
		}
		scopes = append(scopes, sc)
	}
	scopes, err := subjectNamespaces(ctx, kr, ls, scopes)
	if err != nil {
		return ledger.Grant{}, err
	}
	g, err := kr.Grant(scopes, keys...)
	if err != nil {
		return ledger.Grant{}, err
	}
	to, err := kmsurl.Open(ctx, old.To, a.getenv)
	if err != nil {
		return ledger.Grant{}, err
	}
	file, err := g.Marshal(ctx, to)
	if err != nil {
		return ledger.Grant{}, err
	}
	rec := ledger.GrantOf(g)
	rec.To, rec.Out, rec.Replaces = old.To, old.Out, old.ID
	pending := pendingPath(rec)
	f, err := createNew(pending)
	if err != nil {
		return ledger.Grant{}, err
	}
	if err := finishNew(f, file); err != nil {
		os.Remove(pending)
		return ledger.Grant{}, err
	}
	if err := a.recordGrant(ctx, kr, ls, rec); err != nil {
		os.Remove(pending)
		return ledger.Grant{}, err
	}
	return rec, renameSynced(pending, rec.Out)
}

// pendingPath is where a re-issued grant's file waits, beside the file it
// replaces, until it is recorded.
func pendingPath(g ledger.Grant) string { return g.Out + ".reissue-" + g.ID }

// placePending finishes the delivery of a recorded successor g: true once
// its file is in place (renamed there now if it was waiting beside it),
// false if it is neither in place nor waiting.
func placePending(g ledger.Grant) (bool, error) {
	if grantFileID(g.Out) == g.ID {
		os.Remove(pendingPath(g))
		return true, nil
	}
	if _, err := os.Stat(pendingPath(g)); err != nil {
		return false, nil
	}
	return true, renameSynced(pendingPath(g), g.Out)
}

// globEscape quotes the pattern characters of a path for filepath.Glob.
func globEscape(path string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(path)
}

// grantFileID returns the ID in a grant file's header, "" if it cannot be
// read.
func grantFileID(path string) string {
	b, err := boundfile.Read(path, 1<<20)
	if err != nil {
		return ""
	}
	var h struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.ID
}

// renameSynced renames from over to and syncs the directory.
func renameSynced(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// revokeEverywhere records grant id as revoked in every ledger.
func revokeEverywhere(ctx context.Context, kr *keyring.Keyring, ls *ledgers, id string) error {
	return ls.eachGrant("revoking", id, func(l *ledger.Ledger) error {
		_, err := l.RevokeGrant(ctx, kr, id, time.Now())
		return err
	})
}

// reissueForRetire re-issues without key id the grants that alone hold
// its retirement back (err, Retire's refusal, names nothing else) when
// every one of them can be re-issued; it reports whether it did, so that
// the retirement is tried again.
func (a *app) reissueForRetire(ctx context.Context, kr *keyring.Keyring, ls *ledgers, id keyring.KeyID, err error) (bool, error) {
	var refs *lifecycle.ReferencedError
	if !errors.As(err, &refs) || slices.ContainsFunc(refs.References, func(r lifecycle.Reference) bool { return r.Grant == "" }) {
		return false, nil
	}
	st, err := ls.l[0].Verified(ctx, kr)
	if err != nil || st == nil {
		return false, err
	}
	var gs []ledger.Grant
	for _, r := range refs.References {
		i := slices.IndexFunc(st.Grants, func(g ledger.Grant) bool { return g.ID == r.Grant })
		if i < 0 || !reissuable(st.Grants[i]) || len(st.Grants[i].Keys) < 2 {
			return false, nil
		}
		if !slices.ContainsFunc(gs, func(g ledger.Grant) bool { return g.ID == r.Grant }) {
			gs = append(gs, st.Grants[i])
		}
	}
	for _, g := range gs {
		keys := slices.DeleteFunc(slices.Clone(g.Keys), func(k keyring.KeyID) bool { return k == id })
		if err := a.reissue(ctx, kr, ls, st, g, keys); err != nil {
			return false, fmt.Errorf("re-issuing grant %s without %v: %w", g.ID, id, err)
		}
	}
	return true, nil
}

// newGrantReissueCmd is 'ward grant reissue'.
func (a *app) newGrantReissueCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reissue --db URL...",
		Short: "Re-issue every grant sealed under a KMS key that holds no key of the primary (a rotation does it), finishing one that was interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(a.dbs) == 0 {
				return cli.Usage(errors.New("--db is required"), "name every database the keyring serves")
			}
			kr, ls, err := a.keyringLedgers(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			if err := a.settlePending(cmd.Context(), kr, ls); err != nil {
				return err
			}
			return a.grantsAfterRotation(cmd.Context(), kr, ls, kr.Primary().ID)
		},
	}
}
