package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
)

// KeyringEnv names the environment variable with the default keyring path.
const KeyringEnv = "WARD_KEYRING"

func (a *app) keyringFile() (string, error) {
	if a.keyringPath != "" {
		return a.keyringPath, nil
	}
	if p := a.getenv(KeyringEnv); p != "" {
		return p, nil
	}
	return "", usage(errors.New("no keyring given"), "pass --keyring PATH or set "+KeyringEnv)
}

func (a *app) masterKey() (*keyring.MasterKey, error) {
	if a.masterKeyFile == "" && a.getenv(keyring.MasterKeyEnv) == "" && a.prompt != nil {
		if b, err := a.prompt("ward: master key (base64): "); err == nil {
			defer clear(b)
			mk, err := keyring.ParseMasterKey(string(b))
			if err != nil {
				return nil, usage(err, "")
			}
			return mk, nil
		}
	}
	mk, err := keyring.LoadMasterKey(a.masterKeyFile, a.getenv)
	if err != nil {
		return nil, usage(err, "generate one with 'ward keyring gen-master-key --out FILE', then pass --master-key-file FILE or export "+keyring.MasterKeyEnv)
	}
	return mk, nil
}

// KMSEnv names the environment variable with the default KMS URL.
const KMSEnv = "WARD_KMS"

func (a *app) kms() string {
	if a.kmsURL != "" {
		return a.kmsURL
	}
	return a.getenv(KMSEnv)
}

// wrapper returns what seals keyrings: the KMS key when --kms (or
// WARD_KMS) is given, else the master key.
func (a *app) wrapper(ctx context.Context) (keyring.Wrapper, error) {
	if u := a.kms(); u != "" {
		ks, err := kmsurl.Open(ctx, u, a.getenv)
		if err != nil {
			return nil, usage(err, "")
		}
		return kms.KeyringWrapper(ks), nil
	}
	return a.masterKey()
}

// loadKeyring opens the configured keyring with the configured wrapper.
func (a *app) loadKeyring(cmd *cobra.Command) (*keyring.Keyring, keyring.Wrapper, string, error) {
	path, err := a.keyringFile()
	if err != nil {
		return nil, nil, "", err
	}
	mk, err := a.wrapper(cmd.Context())
	if err != nil {
		return nil, nil, "", err
	}
	kr, err := keyring.Load(cmd.Context(), path, mk)
	if errors.Is(err, keyring.ErrWrongWrapper) {
		return nil, nil, "", usage(err, "this keyring was sealed under another key; check --kms, "+keyring.MasterKeyEnv+" or --master-key-file")
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, "", usage(err, "create one with 'ward keyring new'")
	}
	if err != nil {
		return nil, nil, "", err
	}
	return kr, mk, path, nil
}

func (a *app) newKeyringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "Create and manage versioned keyrings",
		Long: `A keyring holds versioned keys: exactly one primary key seals new values,
decrypt-only keys open old ones, disabled keys do neither. The file is sealed
under a master key (--master-key-file or WARD_MASTER_KEY) and never holds key
material in plaintext.`,
	}
	cmd.AddCommand(a.newKeyringNewCmd(), a.newKeyringAddCmd(), a.newKeyringRotateCmd(),
		a.newKeyringStateCmd("promote", "Make a key primary (the old primary becomes decrypt-only)", (*keyring.Keyring).Promote),
		a.newKeyringStateCmd("demote", "Move a decrypt-only key down to disabled", (*keyring.Keyring).Demote),
		a.newKeyringStateCmd("disable", "Stop a key from opening values", (*keyring.Keyring).Disable),
		a.newKeyringStateCmd("enable", "Make a disabled key decrypt-only again", (*keyring.Keyring).Enable),
		a.newKeyringListCmd(), a.newGenMasterKeyCmd(), a.newKeyringRewrapCmd())
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
			if _, err := os.Stat(path); err == nil && !force {
				return usage(fmt.Errorf("%s already exists", path), "use 'ward keyring rotate' to add a key, or --force to replace it (losing its keys)")
			}
			w, err := a.wrapper(cmd.Context())
			if err != nil {
				return err
			}
			kr, err := keyring.New(alg.alg)
			if err != nil {
				return err
			}
			if err := kr.Save(cmd.Context(), path, w); err != nil {
				return err
			}
			p := kr.Primary()
			fmt.Fprintf(a.stdout, "created %s: primary key %v (%v), sealed under %s key %s\n", path, p.ID, p.Algorithm, w.Provider(), w.KeyID())
			return nil
		},
	}
	cmd.Flags().Var(&alg, "alg", "algorithm: AES-128-GCM, AES-256-GCM or XChaCha20-Poly1305")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing keyring")
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
			kr, w, path, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			id, err := kr.Add(alg.alg)
			if err != nil {
				return err
			}
			if promote {
				if err := kr.Promote(id); err != nil {
					return err
				}
			}
			if err := kr.Save(cmd.Context(), path, w); err != nil {
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
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Add a new primary key; the old primary becomes decrypt-only",
		Long: `Add a new primary key; the old primary becomes decrypt-only. Existing values
stay readable. Run 'ward rotate' on each encrypted column to move them to the
new key, then disable the old key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, w, path, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			old := kr.Primary().ID
			id, err := kr.Rotate(alg.alg)
			if err != nil {
				return err
			}
			if err := kr.Save(cmd.Context(), path, w); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "primary key is now %v (%v); %v is decrypt-only\n", id, alg.alg, old)
			return nil
		},
	}
	cmd.Flags().Var(&alg, "alg", "algorithm of the new key")
	return cmd
}

func (a *app) newKeyringStateCmd(name, short string, op func(*keyring.Keyring, keyring.KeyID) error) *cobra.Command {
	return &cobra.Command{
		Use:   name + " KEY-ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := keyring.ParseKeyID(args[0])
			if err != nil {
				return usage(err, "see 'ward keyring list' for key IDs")
			}
			kr, w, path, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			if err := op(kr, id); err != nil {
				if errors.Is(err, keyring.ErrPrimaryKey) {
					return usage(err, "promote another key first")
				}
				return err
			}
			if err := kr.Save(cmd.Context(), path, w); err != nil {
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
		Use:   "list",
		Short: "List keys: ID, algorithm, state, creation time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kr, _, _, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					ID        string    `json:"id"`
					Algorithm string    `json:"algorithm"`
					State     string    `json:"state"`
					Created   time.Time `json:"created"`
				}
				var rows []row
				for _, k := range kr.Keys() {
					rows = append(rows, row{k.ID.String(), k.Algorithm.String(), k.State.String(), k.Created})
				}
				e := json.NewEncoder(a.stdout)
				e.SetIndent("", "  ")
				return e.Encode(rows)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tALGORITHM\tSTATE\tCREATED")
			for _, k := range kr.Keys() {
				fmt.Fprintf(tw, "%v\t%v\t%v\t%s\n", k.ID, k.Algorithm, k.State, k.Created.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) newGenMasterKeyCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "gen-master-key --out FILE",
		Short: "Write a new random master key to a file (mode 0600)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usage(errors.New("--out is required"), "the key is written to a file, never printed")
			}
			mk := keyring.GenerateMasterKey()
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return usage(err, "choose a path that does not exist yet")
			}
			if _, err := fmt.Fprintln(f, mk.Encode()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote master key %s to %s\n", mk.KeyID(), out)
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
		Long: `Re-seal the keyring file under a new wrapping key: after a KMS key rotation,
or to move between a master key and a KMS. The data keys inside, and so every
ciphertext, stay the same. The current wrapper comes from --kms or the master
key as usual.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (to == "") == (toMasterKeyFile == "") {
				return usage(errors.New("give exactly one of --to and --to-master-key-file"), "")
			}
			kr, _, path, err := a.loadKeyring(cmd)
			if err != nil {
				return err
			}
			var w keyring.Wrapper
			if to != "" {
				ks, err := kmsurl.Open(cmd.Context(), to, a.getenv)
				if err != nil {
					return usage(err, "")
				}
				w = kms.KeyringWrapper(ks)
			} else if w, err = keyring.LoadMasterKey(toMasterKeyFile, a.getenv); err != nil {
				return usage(err, "")
			}
			if err := kr.Save(cmd.Context(), path, w); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s is now sealed under %s key %s\n", path, w.Provider(), w.KeyID())
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "KMS URL of the new wrapping key")
	cmd.Flags().StringVar(&toMasterKeyFile, "to-master-key-file", "", "file of the new master key")
	return cmd
}
