package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wardlab/ward/password"
)

func (a *app) newPasswordCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "password",
		Short: "Hash, verify, inspect password hashes and calibrate Argon2id",
		Long: `Hash and verify passwords: Argon2id by default (OWASP: m=19456 KiB, t=2, p=1),
and every legacy format ward verifies for migration (argon2i/d, bcrypt, scrypt,
PBKDF2, Django's and Spring Security's forms). Passwords come from a no-echo
prompt or stdin, never from argv.`,
	}
	cmd.AddCommand(a.newPasswordHashCmd(), a.newPasswordVerifyCmd(), a.newPasswordInspectCmd(), a.newPasswordCalibrateCmd())
	return cmd
}

// readPassword reads a password from the terminal (twice when confirm is
// set) or, when stdin is not a terminal, its first line.
func (a *app) readPassword(confirm bool) ([]byte, error) {
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) && a.prompt != nil {
		pw, err := a.prompt("password: ")
		if err != nil {
			return nil, err
		}
		if confirm {
			again, err := a.prompt("again: ")
			if err != nil {
				return nil, err
			}
			same := bytes.Equal(pw, again)
			clear(again)
			if !same {
				clear(pw)
				return nil, cli.Usage(errors.New("the passwords differ"), "")
			}
		}
		return pw, nil
	}
	b, err := io.ReadAll(io.LimitReader(a.stdin, int64(password.DefaultLimits().MaxPasswordLen)+3))
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return bytes.TrimSuffix(b, []byte("\r")), nil
}

type paramsFlags struct {
	preset    string
	m, t      uint32
	p         uint8
	cost      int
	allowWeak bool
}

func (f *paramsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.preset, "preset", "owasp", "owasp, spring-v5.8, strong, bcrypt12, scrypt17 or pbkdf2-sha256")
	fl.Uint32Var(&f.m, "m", 0, "Argon2 memory in KiB (overrides the preset)")
	fl.Uint32Var(&f.t, "t", 0, "Argon2 passes (overrides the preset)")
	fl.Uint8Var(&f.p, "p", 0, "Argon2 lanes (overrides the preset)")
	fl.IntVar(&f.cost, "cost", 0, "bcrypt cost (overrides the preset)")
	fl.BoolVar(&f.allowWeak, "allow-weak", false, "allow parameters below OWASP's minimums")
}

func (f *paramsFlags) policy() (password.Policy, error) {
	p, err := password.Preset(f.preset)
	if err != nil {
		return password.Policy{}, cli.Usage(err, "")
	}
	if f.m != 0 {
		p.Memory = f.m
	}
	if f.t != 0 {
		p.Time = f.t
	}
	if f.p != 0 {
		p.Parallelism = f.p
	}
	if f.cost != 0 {
		p.Cost = f.cost
	}
	return password.Policy{Preferred: p, AllowWeak: f.allowWeak}, nil
}

func (a *app) newPasswordHashCmd() *cobra.Command {
	var pf paramsFlags
	cmd := &cobra.Command{
		Use:   "hash",
		Short: "Hash a password read from a prompt or stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pol, err := pf.policy()
			if err != nil {
				return err
			}
			h, err := password.NewHasher(pol, nil)
			if err != nil {
				return cli.Usage(err, "pass --allow-weak to write it anyway (tests, legacy systems)")
			}
			pw, err := a.readPassword(true)
			if err != nil {
				return err
			}
			defer clear(pw)
			enc, err := h.Hash(cmd.Context(), pw)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, enc)
			return nil
		},
	}
	pf.register(cmd)
	return cmd
}

func (a *app) newPasswordVerifyCmd() *cobra.Command {
	var (
		pf                paramsFlags
		encoded, hashFile string
		asJSON, truncate  bool
	)
	cmd := &cobra.Command{
		Use:   "verify --hash-file FILE",
		Short: "Verify a password (prompt or stdin) against a stored hash: exit 0 match, 1 mismatch, 2 error",
		Long: `Verify a password against a stored hash read from --hash-file (a file
holding the hash, kept off the command line where other users of the
machine could read it). The password comes from a no-echo prompt on a
terminal, or from the first line of stdin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("hash") {
				a.deprecated("--hash", "use --hash-file: a hash on the command line is visible to other users of the machine")
			}
			if cmd.Flags().Changed("allow-weak") {
				a.deprecated("verify --allow-weak", "verify never refuses weak target parameters (they only decide 'needs rehash'): the flag does nothing")
			}
			if hashFile != "" {
				b, err := readHashFile(hashFile)
				if err != nil {
					return err
				}
				encoded = b
			}
			if encoded == "" {
				return cli.Usage(errors.New("--hash-file is required"), "write the stored hash to a file (mode 0600) and pass its path")
			}
			pol, err := pf.policy()
			if err != nil {
				return err
			}
			pol.AllowWeak = true // the preset only decides NeedsRehash here
			pol.BcryptTruncate = truncate
			h, err := password.NewHasher(pol, nil)
			if err != nil {
				return cli.Usage(err, "")
			}
			pw, err := a.readPassword(false)
			if err != nil {
				return err
			}
			defer clear(pw)
			res, err := h.Verify(cmd.Context(), pw, encoded)
			match := err == nil
			if err != nil && !errors.Is(err, password.ErrMismatch) {
				hint := ""
				if errors.Is(err, password.ErrLimit) {
					hint = "the hash asks for more work than the policy's limits allow; a stored hash is untrusted input"
				}
				return cli.Usage(err, hint)
			}
			a.printVerified(res, match, pol.Preferred, asJSON)
			if !match {
				return cli.Failed(err, "")
			}
			return nil
		},
	}
	pf.register(cmd)
	// The target parameters only decide "needs rehash" here: weak ones are
	// never refused, so --allow-weak has nothing to allow.
	cmd.Flags().MarkHidden("allow-weak")
	cmd.Flags().SetAnnotation("allow-weak", cli.DeprecatedFlag, nil)
	cmd.Flags().StringVar(&hashFile, "hash-file", "", "file holding the stored hash")
	cmd.Flags().StringVar(&encoded, "hash", "", "the stored hash (deprecated: on argv it is visible to other users)")
	cmd.Flags().MarkHidden("hash")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&truncate, "bcrypt-truncate", false, "verify passwords over 72 bytes against bcrypt by truncating, as legacy systems did")
	return cmd
}

// printVerified prints what 'password verify' found.
func (a *app) printVerified(res password.Result, match bool, preferred password.Params, asJSON bool) {
	switch {
	case asJSON:
		a.writeJSON(map[string]any{"match": match, "needs_rehash": res.NeedsRehash, "scheme": res.Params.Scheme.String(),
			"params": res.Params.String(), "format": res.Format})
	case match:
		fmt.Fprintf(a.stdout, "match (%v, %s format)", res.Params, res.Format)
		if res.NeedsRehash {
			fmt.Fprintf(a.stdout, "; needs rehash to %v", preferred)
		}
		fmt.Fprintln(a.stdout)
	default:
		fmt.Fprintln(a.stdout, "mismatch")
	}
}

func (a *app) newPasswordInspectCmd() *cobra.Command {
	var asJSON bool
	var hashFile string
	cmd := &cobra.Command{
		Use:   "inspect [--hash-file FILE | HASH]",
		Short: "Show a hash's scheme and parameters and flag weak ones (hash from --hash-file, the argument, or stdin)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var enc string
			switch {
			case hashFile != "":
				b, err := readHashFile(hashFile)
				if err != nil {
					return err
				}
				enc = b
			case len(args) == 1:
				enc = args[0]
			default:
				b, err := io.ReadAll(io.LimitReader(a.stdin, 4096))
				if err != nil {
					return err
				}
				enc = string(bytes.TrimSpace(b))
			}
			p, format, err := password.Inspect(enc)
			if err != nil {
				return cli.Usage(err, "")
			}
			weak := password.Weakness(p)
			if asJSON {
				return a.writeJSON(map[string]any{"scheme": p.Scheme.String(), "params": p, "format": format,
					"memory_bytes": p.MemoryBytes(), "weak": weak != "", "weakness": weak})
			}
			fmt.Fprintf(a.stdout, "scheme:  %v\nformat:  %s\nparams:  %v\nsalt:    %d bytes\nhash:    %d bytes\nmemory:  %s per hash\n",
				p.Scheme, format, p, p.SaltLen, p.KeyLen, humanize.IBytes(uint64(p.MemoryBytes())))
			if weak != "" {
				fmt.Fprintf(a.stdout, "WEAK:    %s\n", weak)
			} else {
				fmt.Fprintln(a.stdout, "strength: meets OWASP's minimums")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&hashFile, "hash-file", "", "file holding the hash")
	return cmd
}

// readHashFile reads a stored hash from a file: at most 4 KiB, surrounding
// white space trimmed.
func readHashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", cli.Usage(err, "")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", err
	}
	if len(b) > 4096 {
		return "", cli.Usage(fmt.Errorf("%s is larger than 4 KiB: not a password hash", path), "")
	}
	return string(bytes.TrimSpace(b)), nil
}

func (a *app) newPasswordCalibrateCmd() *cobra.Command {
	var (
		target time.Duration
		maxMem string
	)
	cmd := &cobra.Command{
		Use:   "calibrate [--target 250ms] [--max-memory 64MiB]",
		Short: "Measure this machine and propose Argon2id parameters for a target time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mem, err := humanize.ParseBytes(maxMem)
			if err != nil {
				return cli.Usage(fmt.Errorf("--max-memory: %w", err), "for example 64MiB")
			}
			c, err := password.Calibrate(cmd.Context(), target, uint32(mem/1024))
			if err != nil {
				return cli.Usage(err, "")
			}
			for _, s := range c.Tried {
				fmt.Fprintf(a.stderr, "measured %v: %v\n", s.Params, s.Median.Round(time.Millisecond))
			}
			p := c.Params
			fmt.Fprintf(a.stdout, "proposed: argon2id m=%d,t=%d,p=%d (%v per hash here, target %v)\n", p.Memory, p.Time, p.Parallelism,
				c.Median.Round(time.Millisecond), target)
			fmt.Fprintf(a.stdout, "policy:   password.Policy{Preferred: password.Params{Scheme: password.Argon2id, Memory: %d, Time: %d, Parallelism: %d, SaltLen: 16, KeyLen: 32}}\n",
				p.Memory, p.Time, p.Parallelism)
			fmt.Fprintf(a.stdout, "cli:      ward password hash --m %d --t %d --p %d\n", p.Memory, p.Time, p.Parallelism)
			return nil
		},
	}
	cmd.Flags().DurationVar(&target, "target", 250*time.Millisecond, "target time per hash")
	cmd.Flags().StringVar(&maxMem, "max-memory", "64MiB", "most memory per hash")
	return cmd
}
