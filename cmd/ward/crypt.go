package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
)

// maxInput caps what encrypt and decrypt read from stdin.
const maxInput = 64 << 20

type contextFlags struct {
	context            string
	table, column, row string
}

func (f *contextFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.context, "context", "", "associated data the value is bound to")
	cmd.Flags().StringVar(&f.table, "table", "", "bind to a database column like the field layer: table name")
	cmd.Flags().StringVar(&f.column, "column", "", "column name (with --table)")
	cmd.Flags().StringVar(&f.row, "row", "", "row key (with --table)")
}

// bytes returns the context: --context as given, or the field layer's
// context for --table/--column/--row.
func (f *contextFlags) bytes() ([]byte, error) {
	if f.table == "" && f.column == "" && f.row == "" {
		return []byte(f.context), nil
	}
	if f.context != "" {
		return nil, usage(errors.New("--context and --table/--column/--row are exclusive"), "")
	}
	if f.table == "" || f.column == "" || f.row == "" {
		return nil, usage(errors.New("--table, --column and --row go together"), "")
	}
	return field.ContextFor(f.table, f.column, field.RowString(f.row)), nil
}

func readInput(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, usage(fmt.Errorf("input larger than %d bytes", maxInput), "encrypt large files with a streaming tool such as age")
	}
	return b, nil
}

// cryptSetup loads the keyring, builds the context and reads stdin: what
// encrypt and decrypt both need.
func (a *app) cryptSetup(cmd *cobra.Command, cf *contextFlags) (*keyring.Keyring, []byte, []byte, error) {
	kr, _, _, err := a.loadKeyring(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, err := cf.bytes()
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := readInput(a.stdin)
	if err != nil {
		return nil, nil, nil, err
	}
	return kr, ctx, in, nil
}

func (a *app) newEncryptCmd() *cobra.Command {
	var cf contextFlags
	var binary bool
	var ec map[string]string
	cmd := &cobra.Command{
		Use:   "encrypt",
		Short: "Seal stdin under the primary key, to stdout",
		Long: `Seal stdin under the keyring's primary key and write the ciphertext to stdout:
the text form ("w1:…") followed by a newline, or with --binary the raw bytes.
The value is bound to --context (or to --table/--column/--row, exactly as the
field layer binds database values) and opens only with the same context.
With --kms URL (or WARD_KMS) it uses envelope encryption instead of the
keyring: a data key generated and wrapped by that KMS key encrypts locally,
and the wrapped key travels in the ciphertext (text form "e1:…").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.kms() != "" {
				return a.envelopeCrypt(cmd, &cf, ec, true, binary)
			}
			kr, ctx, pt, err := a.cryptSetup(cmd, &cf)
			if err != nil {
				return err
			}
			ct, err := kr.Seal(pt, ctx)
			clear(pt)
			if err != nil {
				return err
			}
			if binary {
				_, err = a.stdout.Write(ct)
				return err
			}
			_, err = fmt.Fprintln(a.stdout, keyring.EncodeText(ct))
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&binary, "binary", false, "write the binary form")
	cmd.Flags().StringToStringVar(&ec, "ec", nil, "with --kms: encryption context pairs, k=v,k2=v2")
	return cmd
}

func (a *app) newDecryptCmd() *cobra.Command {
	var cf contextFlags
	var ec map[string]string
	cmd := &cobra.Command{
		Use:   "decrypt",
		Short: "Open a ciphertext from stdin (text or binary form), to stdout",
		Long: `Open a ciphertext read from stdin, in text or binary form, and write the
plaintext to stdout. Exits 1 if the ciphertext does not open (wrong context,
tampered, unknown or disabled key).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.kms() != "" {
				return a.envelopeCrypt(cmd, &cf, ec, false, false)
			}
			kr, ctx, in, err := a.cryptSetup(cmd, &cf)
			if err != nil {
				return err
			}
			ct := in
			if keyring.IsText(in) {
				if ct, err = keyring.DecodeText(string(bytes.TrimSpace(in))); err != nil {
					return failed(err, "")
				}
			}
			pt, err := kr.Open(ct, ctx)
			if err != nil {
				hint := ""
				switch {
				case errors.Is(err, keyring.ErrWrongContext):
					hint = "pass the same --context (or --table/--column/--row) used to encrypt"
				case errors.Is(err, keyring.ErrUnknownKey):
					hint = "the value was sealed under a key this keyring does not hold"
				case errors.Is(err, keyring.ErrKeyDisabled):
					hint = "enable the key with 'ward keyring enable KEY-ID'"
				}
				return failed(err, hint)
			}
			_, err = a.stdout.Write(pt)
			clear(pt)
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().StringToStringVar(&ec, "ec", nil, "with --kms: encryption context pairs, k=v,k2=v2")
	return cmd
}

// envelopeTextPrefix starts the text form of an envelope ciphertext.
const envelopeTextPrefix = "e1:"

// envelopeCrypt is encrypt and decrypt with --kms: envelope encryption.
func (a *app) envelopeCrypt(cmd *cobra.Command, cf *contextFlags, ec map[string]string, encrypt, binary bool) error {
	ks, err := a.openKMS(cmd)
	if err != nil {
		return err
	}
	ctx, err := cf.bytes()
	if err != nil {
		return err
	}
	in, err := readInput(a.stdin)
	if err != nil {
		return err
	}
	env := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
	if encrypt {
		ct, err := env.Seal(cmd.Context(), in, ctx, ec)
		clear(in)
		if err != nil {
			return err
		}
		if binary {
			_, err = a.stdout.Write(ct)
			return err
		}
		_, err = fmt.Fprintln(a.stdout, envelopeTextPrefix+base64.RawURLEncoding.EncodeToString(ct))
		return err
	}
	ct := in
	if s := string(bytes.TrimSpace(in)); strings.HasPrefix(s, envelopeTextPrefix) {
		if ct, err = base64.RawURLEncoding.DecodeString(s[len(envelopeTextPrefix):]); err != nil {
			return failed(fmt.Errorf("malformed envelope text: %w", err), "")
		}
	}
	pt, err := env.Open(cmd.Context(), ct, ctx, ec)
	if errors.Is(err, kms.ErrAuthentication) || errors.Is(err, kms.ErrMalformed) || errors.Is(err, kms.ErrInvalidCiphertext) {
		return failed(err, "pass the same --context (or --table/--column/--row) and --ec used to encrypt")
	}
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(pt)
	clear(pt)
	return err
}
