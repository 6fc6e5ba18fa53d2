package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// grantOptions are the flags of 'ward grant'.
type grantOptions struct {
	scopes, keys  []string
	to, toMKFile  string
	out           string
	asJSON        bool
	wait          time.Duration
	noReseal      bool
	revokeOffline bool
	subjectTTL    time.Duration
}

func (a *app) newGrantCmd() *cobra.Command {
	var o grantOptions
	cmd := &cobra.Command{
		Use:   "grant --db URL... --scope TABLE.COLUMN... (--to KMS-URL | --to-master-key-file FILE) --out FILE",
		Short: "Issue a reader a key file that opens the named columns and nothing else",
		Long: `Issue a grant: a file of the keys derived for each --scope (a table's column)
from the keyring's keys (every key not disabled, or those named with --key),
sealed under the reader's own key service (--to KMS-URL or --to-master-key-file),
never under the keyring's. With it, 'ward decrypt --grant FILE' and
field.GrantColumn open that column's ciphertext v4 values and fail on every
other column's; it never seals. Every database given with --db records the
grant in its ledger before the file is written: 'ward keyring retire'
refuses a key an unrevoked grant derives from.

A grant opens values sealed under the keys it names for as long as the
file exists: 'ward grant revoke' records the revocation, rotates the
keyring, gives the subjects of its per-subject columns new key versions and
re-seals every column, after which it opens nothing new; copies of the
database taken before stay readable with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.issueGrant(cmd, &o) },
	}
	cmd.PersistentFlags().StringArrayVar(&a.dbs, "db", nil, "a database the keyring serves (repeatable): its ledger records the grant")
	cmd.Flags().StringArrayVar(&o.scopes, "scope", nil, "a column the grant opens, TABLE.COLUMN (repeatable)")
	cmd.Flags().StringArrayVar(&o.keys, "key", nil, "a keyring key to derive from (repeatable; default every key not disabled)")
	cmd.Flags().StringVar(&o.to, "to", "", "the reader's KMS key URL, which seals the grant file")
	cmd.Flags().StringVar(&o.toMKFile, "to-master-key-file", "", "the reader's master key file, which seals the grant file")
	cmd.Flags().StringVar(&o.out, "out", "", "the grant file to write (it must not exist)")
	cmd.AddCommand(a.newGrantListCmd(&o), a.newGrantRevokeCmd(&o), a.newGrantReissueCmd())
	return cmd
}

// issueGrant is 'ward grant'.
func (a *app) issueGrant(cmd *cobra.Command, o *grantOptions) error {
	ctx := cmd.Context()
	if len(o.scopes) == 0 || o.out == "" || len(a.dbs) == 0 {
		return cli.Usage(errors.New("--db, --scope and --out are required"), "name every database the keyring serves: each records the grant")
	}
	var scopes []keyring.GrantScope
	for _, s := range o.scopes {
		sc, err := keyring.ParseGrantScope(s)
		if err != nil {
			return cli.Usage(err, "")
		}
		scopes = append(scopes, sc)
	}
	var ids []keyring.KeyID
	for _, k := range o.keys {
		id, err := keyring.ParseKeyID(k)
		if err != nil {
			return cli.Usage(err, "see 'ward keyring list' for key IDs")
		}
		ids = append(ids, id)
	}
	to, err := a.readerService(ctx, o)
	if err != nil {
		return err
	}
	kr, ls, err := a.keyringLedgers(cmd)
	if err != nil {
		return err
	}
	defer ls.close()
	if err := a.settlePending(ctx, kr, ls); err != nil {
		return err
	}
	if scopes, err = subjectNamespaces(ctx, kr, ls, scopes); err != nil {
		return err
	}
	g, err := kr.Grant(scopes, ids...)
	if err != nil {
		return cli.Usage(err, "")
	}
	file, err := g.Marshal(ctx, to)
	if err != nil {
		return err
	}
	rec := ledger.GrantOf(g)
	rec.To, rec.Pending = grantTo(o.to), true // a rotation re-issues a KMS grant there
	if rec.Out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	return a.deliverGrant(ctx, kr, ls, rec, file, fmt.Sprintf("grant %s: opens %v under keys %v, sealed under %v, written to %s", g.ID(), g.Scopes(), g.Keys(), to.Key(), o.out))
}

// deliverGrant writes a new grant's file and records it, so that a grant
// is live only once its file holds it: the file's name is taken (and
// locked, which tells a later run that this one is still at work), the
// grant recorded as pending in every ledger, the file written, and the
// grant promoted. A run killed in between leaves a pending grant that the
// next grant command settles by the ID in the file (settlePending).
func (a *app) deliverGrant(ctx context.Context, kr *keyring.Keyring, ls *ledgers, rec ledger.Grant, file []byte, done string) error {
	f, err := takeOut(rec.Out)
	if err != nil {
		return err
	}
	if err := a.recordGrant(ctx, kr, ls, rec); err != nil {
		f.Close()
		os.Remove(rec.Out)
		return err
	}
	if err := finishNew(f, file); err != nil {
		os.Remove(rec.Out)
		return errors.Join(fmt.Errorf("writing the grant file: %w", err), dropEverywhere(ctx, kr, ls, rec.ID))
	}
	for i, l := range ls.l {
		if err := l.PromoteGrant(ctx, kr, rec.ID); err != nil {
			return cli.Failed(fmt.Errorf("%s: grant %s is written to %s but still pending: %w", dburl.Redact(ls.urls[i]), rec.ID, rec.Out, err),
				"the next 'ward grant list --db URL…' here promotes it")
		}
	}
	fmt.Fprintln(a.stdout, done)
	return nil
}

// readerService opens the key service of --to or --to-master-key-file.
func (a *app) readerService(ctx context.Context, o *grantOptions) (kms.KeyService, error) {
	if (o.to == "") == (o.toMKFile == "") {
		return nil, cli.Usage(errors.New("give exactly one of --to and --to-master-key-file"), "the grant is sealed under the reader's key, not the keyring's")
	}
	if o.to != "" {
		ks, err := kmsurl.Open(ctx, o.to, a.getenv)
		if err != nil {
			return nil, cli.Usage(err, "")
		}
		return ks, nil
	}
	mk, err := local.Load(o.toMKFile, a.getenv)
	if err != nil {
		return nil, cli.Usage(err, "generate one with 'ward keyring gen-master-key --out FILE'")
	}
	return mk, nil
}

// createNew creates a new file readable by its owner only; it refuses to
// replace one.
func createNew(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, cli.Usage(err, "choose another --out: a grant file is never overwritten")
	}
	return f, nil
}

// takeOut takes a grant file's name for deliverGrant, locked: a new file,
// or an empty one that a grant command killed before it recorded its grant
// left behind — no process holds its lock, and no pending grant names it
// (settlePending, run first, drops the pending grant of an empty file and
// removes the file). A file with content is never taken.
func takeOut(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) && canLock {
		f, err = takeOverEmpty(path)
	}
	if err != nil {
		return nil, cli.Usage(err, "choose another --out: a grant file is never overwritten")
	}
	if err := lockFile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// takeOverEmpty opens, locked, the empty regular file at path that no
// process holds; fs.ErrExist for anything else.
func takeOverEmpty(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil || !before.Mode().IsRegular() || before.Size() != 0 {
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrExist)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil { // another command is at work on it
		f.Close()
		return nil, fmt.Errorf("open %s: %w (a grant command is writing it)", path, fs.ErrExist)
	}
	now, err := f.Stat()
	if err != nil || !os.SameFile(before, now) || now.Size() != 0 { // replaced or written meanwhile
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrExist)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// finishNew writes data to the file createNew or takeOut made, synced, and
// closes it.
func finishNew(f *os.File, data []byte) error {
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// recordGrant records g in every ledger, then writes the wraps its
// per-subject columns open.
func (a *app) recordGrant(ctx context.Context, kr *keyring.Keyring, ls *ledgers, g ledger.Grant) error {
	for i, l := range ls.l {
		if err := l.RecordGrant(ctx, kr, g); err != nil {
			return fmt.Errorf("%s: recording the grant: %w", dburl.Redact(ls.urls[i]), err)
		}
	}
	return refreshGrantWraps(ctx, a.stdout, kr, ls, g.Scopes, false)
}

func (a *app) newGrantListCmd(o *grantOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --db URL",
		Short: "List the grants a database's ledger records",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(a.dbs) != 1 {
				return cli.Usage(errors.New("give one --db"), "")
			}
			kr, ls, err := a.keyringLedgers(cmd)
			if err != nil {
				return err
			}
			defer ls.close()
			if err := a.settlePending(cmd.Context(), kr, ls); err != nil {
				return err
			}
			st, err := ls.l[0].Verified(cmd.Context(), kr)
			if err != nil {
				return err
			}
			var gs []ledger.Grant
			if st != nil {
				gs = st.Grants
			}
			if o.asJSON {
				return a.writeJSON(gs)
			}
			for _, g := range gs {
				state := "live"
				switch {
				case g.Pending:
					state = "pending (its file " + g.Out + " not yet written)"
				case !g.Live() && g.Finished.IsZero():
					state = "revoked " + g.Revoked.Format(time.RFC3339) + " (revocation not finished: run ward grant revoke again)"
				case !g.Live():
					state = "revoked " + g.Revoked.Format(time.RFC3339)
				}
				if g.Replaces != "" {
					state += "  replaces " + g.Replaces
				}
				if g.To != "" {
					state += "  re-issued on rotation to " + g.To
				}
				fmt.Fprintf(a.stdout, "%s  %s  keys %v  issued %s  %s\n", g.ID, strings.Join(g.Scopes, ","), g.Keys, g.Issued.Format(time.RFC3339), state)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON: [{id, scopes, keys, issued, revoked, to, out, replaces, pending, finished}]")
	return cmd
}

func (a *app) newGrantRevokeCmd(o *grantOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke GRANT-ID --db URL...",
		Short: "Revoke a grant: record it, rotate the keyring, re-key its subjects and re-seal, and print what the grant still opens",
		Long: `Revoke a grant: every ledger records the revocation and the grant's wraps
of per-subject columns are removed; then the keyring is rotated across the
fleet as by 'ward keyring rotate --db' and every column re-sealed under the
new key, which the grant never held. A grant of a column sealed under
subjects' keys opened those keys' column keys, which its holder may have
kept: every subject of that namespace is then given a new key version, as
by 'ward subject rekey', whose column keys the grant never opened, and
after --subject-ttl (the fleet's subject-key cache, within which a process
may still seal under the older version) the column is re-sealed under the
new versions. Until the re-seal finishes, and for ever for copies of the
database taken before, the grant still opens its columns' values under the
keys it names: the command prints that window. With --offline the rotation
and the re-key are left to 'ward keyring rotate' and 'ward subject rekey'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.revokeGrant(cmd, args[0], o) },
	}
	cmd.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "how long the rotation waits for the fleet to load the new key")
	cmd.Flags().BoolVar(&o.noReseal, "no-reseal", false, "rotate but do not reseal (run 'ward reseal' on the granted columns yourself)")
	a.oldBoolFlag(cmd, &o.noReseal, "no-reencrypt", "no-reseal")
	cmd.Flags().BoolVar(&o.revokeOffline, "offline", false, "only record the revocation; rotate later with 'ward keyring rotate --db' and re-key with 'ward subject rekey --db'")
	cmd.Flags().DurationVar(&o.subjectTTL, "subject-ttl", subject.DefaultTTL, "the longest subject-key cache (subject.Config.TTL) of the fleet's processes: how long the re-key waits before re-sealing")
	return cmd
}

// revokeGrant is 'ward grant revoke': it records the revocation of the
// grant and of every re-issue of it, then, unless --offline, rotates the
// keyring if a grant of that line holds a key of the primary, re-keys the
// namespaces of its per-subject columns, and records the revocation as
// finished. Revoking a grant whose revocation finished does nothing; a
// revocation that was interrupted, or run --offline, continues.
func (a *app) revokeGrant(cmd *cobra.Command, id string, o *grantOptions) error {
	ctx := cmd.Context()
	if len(a.dbs) == 0 {
		return cli.Usage(errors.New("--db is required"), "name every database the keyring serves")
	}
	kr, ls, err := a.keyringLedgers(cmd)
	if err != nil {
		return err
	}
	line, perSubject, err := a.recordRevocation(ctx, kr, ls, id)
	ls.close()
	if err != nil || line == nil {
		return err
	}
	if o.revokeOffline {
		fmt.Fprint(a.stdout, "not rotating (--offline): run 'ward keyring rotate --db' so that the columns move to a key the grant never held")
		if perSubject {
			fmt.Fprint(a.stdout, ", then 'ward subject rekey --db' so that no new value is sealed under a subject key it opened")
		}
		fmt.Fprintln(a.stdout, "; or run this command again without --offline, which does both")
		return nil
	}
	primary := kr.Primary().ID
	if slices.ContainsFunc(line, func(g ledger.Grant) bool { return slices.Contains(g.Keys, primary) }) {
		if err := a.rotateFleet(cmd, kr, kr.Primary().Algorithm, fleetRotation{wait: o.wait, noReseal: o.noReseal}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "no key of the primary %v is in the grant: the keyring needs no rotation\n", primary)
	}
	if err := a.rekeyGranted(cmd, kr, line[0], o); err != nil {
		return err
	}
	return a.finishRevocation(ctx, kr, line)
}

// recordRevocation settles pending grants, then records grant id and every
// re-issue of it as revoked in every ledger and removes their wraps of
// per-subject columns; it returns that line of grants (nil when its
// revocation already finished: nothing to do) and whether a column it
// opens is sealed per subject.
func (a *app) recordRevocation(ctx context.Context, kr *keyring.Keyring, ls *ledgers, id string) ([]ledger.Grant, bool, error) {
	if err := a.settlePending(ctx, kr, ls); err != nil {
		return nil, false, err
	}
	st, err := ls.l[0].Verified(ctx, kr)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", dburl.Redact(ls.urls[0]), err)
	}
	var line []ledger.Grant
	if i := slices.IndexFunc(stateGrants(st), func(g ledger.Grant) bool { return g.ID == id }); i >= 0 {
		line = append([]ledger.Grant{st.Grants[i]}, st.Successors(id)...)
	}
	if line == nil {
		return nil, false, cli.Usage(fmt.Errorf("%w: %q", ledger.ErrUnknownGrant, id), "see 'ward grant list --db URL'")
	}
	rec := line[0]
	if !slices.ContainsFunc(line, func(g ledger.Grant) bool { return g.Live() || g.Finished.IsZero() }) {
		fmt.Fprintf(a.stdout, "grant %s was revoked on %s and its revocation finished: nothing to do\n", rec.ID, rec.Revoked.Format(time.RFC3339))
		return nil, false, nil
	}
	for _, g := range line {
		if err := revokeEverywhere(ctx, kr, ls, g.ID); err != nil {
			return nil, false, err
		}
		if g.ID != id && g.Live() {
			fmt.Fprintf(a.stdout, "grant %s, re-issued from %s, revoked too\n", g.ID, id)
		}
	}
	if err := refreshGrantWraps(ctx, a.stdout, kr, ls, rec.Scopes, true); err != nil { // a per-subject column no grant names loses its wraps at once
		return nil, false, err
	}
	fmt.Fprintf(a.stdout, "grant %s revoked; it opens %s values sealed under keys %v: in this database until they are re-sealed under a newer key, and in every copy of it taken before, for ever\n",
		rec.ID, strings.Join(rec.Scopes, ", "), rec.Keys)
	return line, len(grantedNamespaces(st, rec.Scopes)) > 0, nil
}

// stateGrants is st's grants (none for a database without a ledger).
func stateGrants(st *ledger.State) []ledger.Grant {
	if st == nil {
		return nil
	}
	return st.Grants
}

// finishRevocation records, in every ledger, that the revocation of the
// grants of line needs nothing more.
func (a *app) finishRevocation(ctx context.Context, kr *keyring.Keyring, line []ledger.Grant) error {
	ls, err := openCheckedLedgers(ctx, a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	for _, g := range line {
		if err := finishEverywhere(ctx, kr, ls, g.ID); err != nil {
			return err
		}
	}
	return nil
}

// rekeyGranted gives the subjects of every namespace whose per-subject
// columns the revoked grant rec opened new key versions in every database,
// then, after --subject-ttl, re-seals those columns; last, the grants still
// in force get their wraps of the new versions.
func (a *app) rekeyGranted(cmd *cobra.Command, kr *keyring.Keyring, rec ledger.Grant, o *grantOptions) error {
	ctx := cmd.Context()
	ls, err := openCheckedLedgers(ctx, a.dbs, kr)
	if err != nil {
		return err
	}
	defer ls.close()
	for i, d := range ls.databases() {
		st, err := ls.l[i].Verified(ctx, kr)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		ns := grantedNamespaces(st, rec.Scopes)
		if len(ns) == 0 {
			continue
		}
		_, _, err = lifecycle.RekeyNamespaces(ctx, kr, d, lifecycle.RekeyOptions{Namespaces: ns, Settle: o.subjectTTL, NoReseal: o.noReseal, Revocation: rec.ID, Observer: a.rekeyObserver()})
		if err != nil {
			return interrupted(err)
		}
	}
	return refreshGrantWraps(ctx, a.stdout, kr, ls, nil, false)
}

// grantedNamespaces lists the namespaces whose per-subject columns scopes
// (TABLE.COLUMN) name, as st records the columns.
func grantedNamespaces(st *ledger.State, scopes []string) []string {
	var out []string
	for _, c := range st.SubjectColumns(scopes) {
		if !slices.Contains(out, c.Namespace) {
			out = append(out, c.Namespace)
		}
	}
	return out
}

// keyringLedgers loads the keyring and opens the ledger of every --db,
// refusing a keyring a ledger does not vouch for.
func (a *app) keyringLedgers(cmd *cobra.Command) (*keyring.Keyring, *ledgers, error) {
	kr, err := a.loadKeyring(cmd)
	if err != nil {
		return nil, nil, err
	}
	ls, err := openCheckedLedgers(cmd.Context(), a.dbs, kr)
	if err != nil {
		return nil, nil, err
	}
	return kr, ls, nil
}

// subjectNamespaces sets the namespace of every scope that names a column
// sealed under subjects' keys, as the first database's ledger records it.
func subjectNamespaces(ctx context.Context, kr *keyring.Keyring, ls *ledgers, scopes []keyring.GrantScope) ([]keyring.GrantScope, error) {
	st, err := ls.l[0].Verified(ctx, kr)
	if err != nil || st == nil {
		return scopes, err
	}
	for i, sc := range scopes {
		for _, c := range st.Columns {
			if c.Table == sc.Table && c.Column == sc.Column && c.Subject != "" {
				scopes[i].Namespace = c.Namespace
			}
		}
	}
	return scopes, nil
}

// refreshGrantWraps rewrites, in every database, the grants' wraps of the
// subject keys of each namespace whose per-subject columns scopes name
// (all, for nil; subject.Store.RefreshGrants): after a grant, so that it
// opens what was sealed before; after a revocation, so that its wraps are
// gone; after a rotation that re-seals, under the new key (rewrite).
func refreshGrantWraps(ctx context.Context, out io.Writer, kr *keyring.Keyring, ls *ledgers, scopes []string, rewrite bool) error {
	for i, l := range ls.l {
		st, err := l.Verified(ctx, kr)
		if err != nil || st == nil {
			return err
		}
		done := map[string]bool{}
		for _, c := range st.Columns {
			if c.Subject == "" || done[c.Namespace] || (scopes != nil && !slices.Contains(scopes, c.Table+"."+c.Column)) {
				continue
			}
			done[c.Namespace] = true
			s, err := subject.Open(ctx, subject.Config{DB: l.DB, Dialect: l.Dialect, Keyring: kr, Ledger: l, Namespace: c.Namespace})
			if err != nil {
				return fmt.Errorf("%s: %w", dburl.Redact(ls.urls[i]), err)
			}
			n, err := s.RefreshGrants(ctx, rewrite)
			if err != nil {
				return fmt.Errorf("%s: %w", dburl.Redact(ls.urls[i]), err)
			}
			fmt.Fprintf(out, "%s: the grants' wraps of %d keys of namespace %s rewritten\n", dburl.Redact(ls.urls[i]), n, c.Namespace)
		}
	}
	return nil
}
