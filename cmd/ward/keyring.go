package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/local"
)

// errNoKeyring means neither --keyring nor WARD_KEYRING was given.
var errNoKeyring = errors.New("no keyring given")

// KeyringEnv names the environment variable with the default keyring path.
const KeyringEnv = "WARD_KEYRING"

func (a *app) keyringFile() (string, error) {
	if a.keyringPath != "" {
		return a.keyringPath, nil
	}
	if p := a.getenv(KeyringEnv); p != "" {
		return p, nil
	}
	return "", cli.Usage(errNoKeyring, "pass --keyring PATH or set "+KeyringEnv)
}

// masterKey reads the master key from --master-key-file, WARD_MASTER_KEY,
// or a no-echo prompt on a terminal.
func (a *app) masterKey() (*local.MasterKey, error) {
	if a.masterKeyFile == "" && a.getenv(local.EnvVar) == "" && a.prompt != nil {
		if b, err := a.prompt("ward: master key (base64): "); err == nil {
			defer clear(b)
			mk, err := local.Parse(string(b))
			if err != nil {
				return nil, cli.Usage(err, "")
			}
			return mk, nil
		}
	}
	mk, err := local.Load(a.masterKeyFile, a.getenv)
	if err != nil {
		return nil, cli.Usage(err, "generate one with 'ward keyring gen-master-key --out FILE', then pass --master-key-file FILE or export "+local.EnvVar)
	}
	return mk, nil
}

// KMSEnv names the environment variable with the default KMS URL.
const KMSEnv = "WARD_KMS"

func (a *app) kmsURL() string {
	if a.kmsFlag != "" {
		return a.kmsFlag
	}
	return a.getenv(KMSEnv)
}

// keyService returns the key service that seals keyrings (and, with
// --envelope, data keys): the KMS key of --kms (or WARD_KMS), else the
// master key.
func (a *app) keyService(ctx context.Context) (kms.KeyService, error) {
	if u := a.kmsURL(); u != "" {
		ks, err := kmsurl.Open(ctx, u, a.getenv)
		if err != nil {
			return nil, cli.Usage(err, "")
		}
		return ks, nil
	}
	return a.masterKey()
}

// loadKeyring opens the configured keyring with the configured key
// service. It never creates one: a missing file is an error.
func (a *app) loadKeyring(cmd *cobra.Command) (*keyring.Keyring, error) {
	path, err := a.keyringFile()
	if err != nil {
		return nil, err
	}
	ks, err := a.keyService(cmd.Context())
	if err != nil {
		return nil, err
	}
	kr, err := keyring.Load(cmd.Context(), path, ks)
	switch {
	case errors.Is(err, kms.ErrMisconfigured):
		return nil, cli.Usage(err, kmsMisconfigured)
	case errors.Is(err, keyring.ErrWrongWrapper):
		return nil, cli.Usage(err, "this keyring was sealed under another key; check --kms, "+local.EnvVar+" or --master-key-file")
	case errors.Is(err, fs.ErrNotExist):
		return nil, cli.Usage(err, "check the path, or create a keyring with 'ward keyring new'")
	case err != nil:
		return nil, err
	}
	return kr, nil
}

// kmsMisconfigured is the hint for a key service an operator must fix.
const kmsMisconfigured = "the key service is misconfigured, which retrying does not fix: for AWS KMS give credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an instance role) and a region"

// saveError adds the hint for a refused save.
func saveError(err error) error {
	switch {
	case errors.Is(err, keyring.ErrStale):
		return cli.Usage(err, "another writer changed the keyring file since it was read; run the command again")
	case errors.Is(err, keyring.ErrPrimaryKey):
		return cli.Usage(err, "promote another key first")
	}
	return err
}

func (a *app) newKeyringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "Create and manage versioned keyrings",
		Long: `A keyring holds versioned keys: exactly one primary key seals new values,
decrypt-only keys open old ones, disabled keys do neither. The file is sealed
under a key service (a master key from --master-key-file or WARD_MASTER_KEY,
or a KMS key from --kms) and never holds key material in plaintext. Every
change is saved under a lock, only if the file is still the one that was
read, before it takes effect.`,
	}
	disable := a.newKeyringStateCmd("disable", "Stop a key from opening values", (*keyring.Manager).Disable)
	demote := a.newKeyringStateCmd("demote", "Deprecated: use 'keyring disable'", (*keyring.Manager).Disable)
	demote.Hidden = true
	demote.PreRun = func(*cobra.Command, []string) {
		a.deprecated("'keyring demote'", "use 'ward keyring disable' (the same operation)")
	}
	cmd.PersistentFlags().StringArrayVar(&a.dbs, "db", nil, "a database this keyring serves (repeatable): its ledger is checked before keys change and records them after")
	cmd.AddCommand(a.newKeyringNewCmd(), a.newKeyringAddCmd(), a.newKeyringRotateCmd(),
		a.newKeyringStateCmd("promote", "Make a key primary (the old primary becomes decrypt-only)", (*keyring.Manager).Promote),
		disable, demote,
		a.newKeyringStateCmd("enable", "Make a disabled key decrypt-only again", (*keyring.Manager).Enable),
		a.newKeyringListCmd(), a.newGenMasterKeyCmd(), a.newKeyringRewrapCmd(), a.newKeyringRetireCmd(), a.newKeyringRemacCmd(), a.newKeyringReindexCmd())
	return cmd
}

type algFlag struct{ alg keyring.Algorithm }

func (f *algFlag) String() string { return f.alg.String() }
func (f *algFlag) Type() string   { return "algorithm" }
func (f *algFlag) Set(s string) error {
	a, err := keyring.ParseAlgorithm(s)
	if err != nil {
		return err
	}
	f.alg = a
	return nil
}

func (a *app) newKeyringNewCmd() *cobra.Command {
	alg := algFlag{keyring.DefaultAlgorithm}
	var force bool
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Create a keyring with one primary key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := a.keyringFile()
			if err != nil {
				return err
			}
			ks, err := a.keyService(cmd.Context())
			if err != nil {
				return err
			}
			if force {
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			kr, err := keyring.Create(cmd.Context(), path, ks, alg.alg)
			if errors.Is(err, fs.ErrExist) {
				return cli.Usage(err, "use 'ward keyring rotate' to add a key, or --force to replace it (losing its keys)")
			}
			if errors.Is(err, kms.ErrMisconfigured) {
				return cli.Usage(err, kmsMisconfigured)
			}
			if err != nil {
				return err
			}
			p := kr.Primary()
			fmt.Fprintf(a.stdout, "created %s (%s): primary key %v (%v), sealed under %v\n", path, kr.ID(), p.ID, p.Algorithm, ks.Key())
			return nil
		},
	}
	cmd.Flags().Var(&alg, "alg", "algorithm: AES-128-GCM, AES-256-GCM or XChaCha20-Poly1305")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing keyring (its keys are lost)")
	return cmd
}

func (a *app) newKeyringAddCmd() *cobra.Command {
	alg := algFlag{keyring.DefaultAlgorithm}
	var promote bool
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Add a decrypt-only key (distribute it, then promote it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			var id keyring.KeyID
			err = a.keyChange(cmd, kr, func() ([]keyring.KeyID, error) {
				var err error
				if id, err = keyring.NewManager(kr).Add(cmd.Context(), alg.alg); err != nil {
					return nil, saveError(err)
				}
				if promote {
					if err := keyring.NewManager(kr).Promote(cmd.Context(), id); err != nil {
						return nil, saveError(err)
					}
				}
				return []keyring.KeyID{id}, nil
			})
			if err != nil {
				return err
			}
			info, _ := kr.Lookup(id)
			fmt.Fprintf(a.stdout, "added key %v (%v, %v)\n", id, info.Algorithm, info.State)
			return nil
		},
	}
	cmd.Flags().Var(&alg, "alg", "algorithm: AES-128-GCM, AES-256-GCM or XChaCha20-Poly1305")
	cmd.Flags().BoolVar(&promote, "promote", false, "make the new key primary at once")
	return cmd
}

func (a *app) newKeyringRotateCmd() *cobra.Command {
	alg := algFlag{keyring.DefaultAlgorithm}
	var o fleetRotation
	cmd := &cobra.Command{
		Use:   "rotate --db URL...",
		Short: "Rotate across a running fleet: add, wait for every process, promote, wait, reseal",
		Long: `Rotate the keyring's primary key across every process that uses it, with no
failed request: add the new key decrypt-only and record it in each database's
ledger; wait until every process registered in each database (package
fleet: each process heartbeats the keys it holds, and re-reads the
keyring file on its own) holds it; promote it; wait until every process has
loaded the promotion; then reseal every column the ledgers record and every
subject key (--no-reseal stops before).

A process whose heartbeat is older than --stale-after (frozen, killed) stops
blocking, and is named; --skip names a process to go without (it keeps
working: a keyring that meets an unknown key ID re-reads its file once
before failing, but it may seal under the old key until it reloads). A
registration that disappears without its process leaving blocks until
skipped. The wait gives up after --wait, naming who it waited for; run the
command again to continue (an added key is reused).

--offline is the former one-step rotation (add and promote at once), for a
single process that reloads on SIGHUP; it is deprecated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			if o.offline {
				fmt.Fprintln(a.stderr, "ward: warning: --offline is deprecated: a process that has not reloaded cannot read what the others write under the new key; rotate with --db, which waits for every registered process")
				old := kr.Primary().ID
				var id keyring.KeyID
				err = a.keyChange(cmd, kr, func() ([]keyring.KeyID, error) {
					var err error
					if id, err = keyring.NewManager(kr).AddPrimary(cmd.Context(), alg.alg); err != nil {
						return nil, saveError(err)
					}
					return []keyring.KeyID{id}, nil
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "primary key is now %v (%v); %v is decrypt-only\n", id, alg.alg, old)
				return nil
			}
			if len(a.dbs) == 0 {
				return cli.Usage(errors.New("rotate needs --db for each database the keyring serves"),
					"the fleet's processes register in their database; --offline is the one-step rotation for a single process")
			}
			return a.rotateFleet(cmd, kr, alg.alg, o)
		},
	}
	cmd.Flags().Var(&alg, "alg", "algorithm of the new key")
	cmd.Flags().BoolVar(&o.offline, "offline", false, "deprecated: add and promote at once, without waiting for the fleet")
	cmd.Flags().DurationVar(&o.staleAfter, "stale-after", 2*time.Minute, "a process whose last heartbeat is older stops blocking (named)")
	cmd.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "give up waiting for the fleet after this long")
	cmd.Flags().StringArrayVar(&o.skip, "skip", nil, "go without a process (its ID or host:pid, from 'ward fleet'); repeatable")
	cmd.Flags().BoolVar(&o.noReseal, "no-reseal", false, "stop after the promotion; reseal later with 'ward reseal' and 'ward subject reseal'")
	a.oldBoolFlag(cmd, &o.noReseal, "no-reencrypt", "no-reseal")
	return cmd
}

func (a *app) newKeyringStateCmd(name, short string, op func(*keyring.Manager, context.Context, keyring.KeyID) error) *cobra.Command {
	return &cobra.Command{
		Use:   name + " KEY-ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := keyring.ParseKeyID(args[0])
			if err != nil {
				return cli.Usage(err, "see 'ward keyring list' for key IDs")
			}
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			err = a.keyChange(cmd, kr, func() ([]keyring.KeyID, error) {
				if err := op(keyring.NewManager(kr), cmd.Context(), id); err != nil {
					return nil, saveError(err)
				}
				return []keyring.KeyID{kr.Primary().ID}, nil
			})
			if err != nil {
				return err
			}
			info, _ := kr.Lookup(id)
			fmt.Fprintf(a.stdout, "key %v is %v\n", id, info.State)
			return nil
		},
	}
}

func (a *app) newKeyringListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--db URL...]",
		Short: "List keys: ID, algorithm, state, creation time; with --db, how many values each has sealed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			seals, err := a.keyUsage(cmd.Context(), kr)
			if err != nil {
				return err
			}
			if asJSON {
				return a.writeJSON(keyList(kr, seals))
			}
			fmt.Fprintf(a.stdout, "keyring %s, generation %d\n", kr.ID(), kr.Generation())
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprint(tw, "ID\tALGORITHM\tSTATE\tCREATED")
			if seals != nil {
				fmt.Fprint(tw, "\tSEALS")
			}
			fmt.Fprintln(tw)
			for _, k := range kr.Keys() {
				fmt.Fprintf(tw, "%v\t%v\t%v\t%s", k.ID, k.Algorithm, k.State, k.Created.Format(time.RFC3339))
				if seals != nil {
					fmt.Fprintf(tw, "\t~%d", seals[k.ID])
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// keyListJSON is what 'keyring list --json' prints.
type keyListJSON struct {
	Keyring    string       `json:"keyring"`
	Generation uint64       `json:"generation"`
	Keys       []keyRowJSON `json:"keys"`
}

type keyRowJSON struct {
	ID        string    `json:"id"`
	Algorithm string    `json:"algorithm"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	// Seals estimates the values the key sealed (with --db; fleet.Usage).
	Seals *uint64 `json:"seals,omitempty"`
}

func keyList(kr *keyring.Keyring, seals map[keyring.KeyID]uint64) keyListJSON {
	out := keyListJSON{Keyring: kr.ID(), Generation: kr.Generation()}
	for _, k := range kr.Keys() {
		row := keyRowJSON{ID: k.ID.String(), Algorithm: k.Algorithm.String(), State: k.State.String(), Created: k.Created}
		if seals != nil {
			n := seals[k.ID]
			row.Seals = &n
		}
		out.Keys = append(out.Keys, row)
	}
	return out
}

func (a *app) newGenMasterKeyCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "gen-master-key --out FILE",
		Short: "Write a new random master key to a file (mode 0600)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return cli.Usage(errors.New("--out is required"), "the key is written to a file, never printed")
			}
			mk := local.Generate()
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return cli.Usage(err, "choose a path that does not exist yet")
			}
			if _, err := fmt.Fprintln(f, mk.Encode()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote master key %s to %s\n", mk.Key().ID, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to create")
	return cmd
}

func (a *app) newKeyringRewrapCmd() *cobra.Command {
	var to, toMasterKeyFile string
	cmd := &cobra.Command{
		Use:   "rewrap (--to KMS-URL | --to-master-key-file FILE)",
		Short: "Re-seal the keyring under another KMS key or master key, without touching the data",
		Long: `Re-seal the keyring file under a new key service: after a KMS key rotation,
or to move between a master key and a KMS. The data keys inside, and so every
ciphertext, stay the same. The current key service comes from --kms or the
master key as usual.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (to == "") == (toMasterKeyFile == "") {
				return cli.Usage(errors.New("give exactly one of --to and --to-master-key-file"), "")
			}
			kr, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			var ks kms.KeyService
			if to != "" {
				if ks, err = kmsurl.Open(cmd.Context(), to, a.getenv); err != nil {
					return cli.Usage(err, "")
				}
			} else if ks, err = local.Load(toMasterKeyFile, a.getenv); err != nil {
				return cli.Usage(err, "")
			}
			if err := keyring.NewManager(kr).Rewrap(cmd.Context(), ks); err != nil {
				return saveError(err)
			}
			fmt.Fprintf(a.stdout, "%s is now sealed under %v\n", kr.Path(), ks.Key())
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "KMS URL of the new key")
	cmd.Flags().StringVar(&toMasterKeyFile, "to-master-key-file", "", "file of the new master key")
	return cmd
}
