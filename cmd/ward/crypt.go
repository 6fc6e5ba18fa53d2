package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
)

// maxInput caps what encrypt and decrypt read from stdin.
const maxInput = 64 << 20

type contextFlags struct {
	grant              string // decrypt: a grant file instead of the keyring
	context            string
	table, column, row string
	bind               []string        // NAME=VALUE, in the column's Bind order
	gate               *fleetgate.Gate // encrypt --db: the fleet's write gate
}

func (f *contextFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.context, "context", "", "associated data the value is bound to")
	cmd.Flags().StringVar(&f.table, "table", "", "bind to a database column like the field layer: table name")
	cmd.Flags().StringVar(&f.column, "column", "", "column name (with --table)")
	cmd.Flags().StringVar(&f.row, "row", "", "row key (with --table)")
	cmd.Flags().StringArrayVar(&f.bind, "bind", nil, "with --table: a bound column and its value, NAME=VALUE, repeated in the column's Bind order")
}

// bytes returns the context: --context as given, or the field layer's
// (v3) context for --table/--column/--row (and --bind).
func (f *contextFlags) bytes(kr *keyring.Keyring) ([]byte, error) {
	col, row, err := f.fieldColumn(kr)
	if err != nil || col == nil {
		return []byte(f.context), err
	}
	ctx, err := col.Context(row)
	if err != nil {
		return nil, cli.Usage(err, "")
	}
	return ctx, nil
}

// fieldColumn returns the field layer's column and row for --table/--column/
// --row (and --bind), or nil without them.
func (f *contextFlags) fieldColumn(kr *keyring.Keyring) (*field.Column, field.RowKey, error) {
	if f.table == "" && f.column == "" && f.row == "" && f.bind == nil {
		return nil, field.RowKey{}, nil
	}
	if f.context != "" {
		return nil, field.RowKey{}, cli.Usage(errors.New("--context and --table/--column/--row are exclusive"), "")
	}
	if f.table == "" || f.column == "" || f.row == "" {
		return nil, field.RowKey{}, cli.Usage(errors.New("--table, --column and --row go together"), "")
	}
	var names []string
	var values []any
	for _, b := range f.bind {
		name, value, ok := strings.Cut(b, "=")
		if !ok || name == "" {
			return nil, field.RowKey{}, cli.Usage(fmt.Errorf("--bind %q is not NAME=VALUE", b), "")
		}
		names, values = append(names, name), append(values, value)
	}
	var opts []field.ColumnOption
	if names != nil {
		opts = append(opts, field.Bind(names...))
	}
	if f.gate != nil {
		opts = append(opts, field.WithForms(f.gate))
	}
	if kr == nil { // envelope mode: the context does not depend on a keyring
		kr, _ = keyring.New(keyring.DefaultAlgorithm)
	}
	col, err := field.NewColumn(kr, f.table, f.column, opts...)
	if err != nil {
		return nil, field.RowKey{}, cli.Usage(err, "")
	}
	row := field.RowString(f.row).With(values...)
	if _, err := col.Context(row); err != nil {
		return nil, field.RowKey{}, cli.Usage(err, "")
	}
	return col, row, nil
}

func readInput(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, cli.Usage(fmt.Errorf("input larger than %d bytes", maxInput), "encrypt large files with a streaming tool such as age")
	}
	return b, nil
}

// cryptSetup loads the keyring, builds the context and reads stdin: what
// encrypt and decrypt both need.
func (a *app) cryptSetup(cmd *cobra.Command, cf *contextFlags) (*keyring.Keyring, []byte, []byte, error) {
	kr, err := a.loadKeyring(cmd)
	if err != nil {
		if a.kmsURL() != "" && errors.Is(err, errNoKeyring) {
			return nil, nil, nil, cli.Usage(err, "with --kms, encrypt and decrypt use a keyring wrapped by that key; for envelope encryption pass --envelope")
		}
		return nil, nil, nil, err
	}
	ctx, err := cf.bytes(kr)
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
	var binary, envelope bool
	var ec map[string]string
	var dbURL string
	cmd := &cobra.Command{
		Use:   "encrypt",
		Short: "Seal stdin under the primary key, to stdout",
		Long: `Seal stdin under the keyring's primary key and write the ciphertext to stdout:
the text form ("w4:…" with --table, "w3:…" with --context) followed by a newline, or with --binary the raw bytes.
With --db, a --table value is sealed in the ciphertext version every
process registered in that database reads (v3 until its fleet opens v4), as
the application and ward's jobs write it.
The value is bound to --context (or to --table/--column/--row and --bind,
exactly as the field layer binds database values) and opens only with the
same context.

With --envelope it uses envelope encryption instead of a keyring: a data key
generated and wrapped by the key service (--kms URL, or the master key)
encrypts locally, and the wrapped key travels in the ciphertext (text form
"e1:…"); --ec adds encryption-context pairs the KMS binds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envelope {
				return a.envelopeSeal(cmd, &cf, ec, binary)
			}
			kr, ctx, pt, err := a.cryptSetup(cmd, &cf)
			if err != nil {
				return err
			}
			defer clear(pt)
			if err := a.fleetGate(cmd.Context(), kr, &cf, dbURL); err != nil {
				return err
			}
			var ct []byte
			if col, row, _ := cf.fieldColumn(kr); col != nil {
				ct, err = col.AppendSeal(nil, row, pt) // ciphertext v4, under the column's scope
			} else {
				ct, err = kr.Seal(pt, ctx)
			}
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
	cmd.Flags().BoolVar(&envelope, "envelope", false, "envelope encryption under the key service (--kms or the master key), no keyring")
	cmd.Flags().StringToStringVar(&ec, "ec", nil, "with --envelope: encryption context pairs, k=v,k2=v2")
	cmd.Flags().StringVar(&dbURL, "db", "", "with --table: the database the value is for: seal the ciphertext version every process registered there reads (v3 until its fleet opens v4)")
	return cmd
}

// fleetGate gives --table's column the write gate of the fleet registered
// in --db: a value stored there by hand is sealed in a form every process
// serving it reads.
func (a *app) fleetGate(ctx context.Context, kr *keyring.Keyring, cf *contextFlags, dbURL string) error {
	if dbURL == "" {
		return nil
	}
	if cf.table == "" {
		return cli.Usage(errors.New("--db needs --table, --column and --row"), "the fleet's forms are a column's")
	}
	db, dialect, err := openDB(dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	cf.gate = (&fleet.Registry{DB: db, Dialect: dialect}).WriteGate(ctx, kr, fleetgate.Sealed(cf.table, cf.column))
	if !cf.gate.Allows(fleetgate.Ciphertext(4)) {
		fmt.Fprintln(a.stderr, "ward: writing ciphertext v3: not every process registered in --db reads v4 yet (see ward fleet)")
	}
	return nil
}

func (a *app) newDecryptCmd() *cobra.Command {
	var cf contextFlags
	var ec map[string]string
	cmd := &cobra.Command{
		Use:   "decrypt",
		Short: "Open a ciphertext from stdin (text or binary form), to stdout",
		Long: `Open a ciphertext read from stdin, in text or binary form, and write the
plaintext to stdout. An envelope ("e1:…" or its binary form) is opened with
the key service (--kms URL, or the master key); anything else with the
keyring. Exits 1 if the ciphertext does not open (wrong context, tampered,
unknown or disabled key).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := readInput(a.stdin)
			if err != nil {
				return err
			}
			if isEnvelope(in) {
				return a.envelopeOpen(cmd, &cf, ec, in)
			}
			if cf.grant != "" {
				return a.grantOpen(cmd, &cf, in)
			}
			a.stdin = bytes.NewReader(in)
			return a.keyringOpen(cmd, &cf)
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&cf.grant, "grant", "", "open with a grant file (ward grant) instead of the keyring: needs --table/--column/--row; the grant's key service is --kms or the master key")
	cmd.Flags().StringToStringVar(&ec, "ec", nil, "for an envelope: encryption context pairs, k=v,k2=v2")
	return cmd
}

// keyringOpen is decrypt with a keyring.
func (a *app) keyringOpen(cmd *cobra.Command, cf *contextFlags) error {
	kr, ctx, in, err := a.cryptSetup(cmd, cf)
	if err != nil {
		return err
	}
	ct := in
	if keyring.IsText(in) {
		if ct, err = keyring.DecodeText(string(bytes.TrimSpace(in))); err != nil {
			return cli.Failed(err, "")
		}
	}
	var pt []byte
	if col, row, _ := cf.fieldColumn(kr); col != nil {
		pt, err = col.AppendOpen(nil, row, ct) // every version, as the field layer opens it
	} else {
		pt, err = kr.Open(ct, ctx)
	}
	if err != nil {
		hint := ""
		switch {
		case errors.Is(err, keyring.ErrWrongContext):
			hint = "pass the same --context (or --table/--column/--row and --bind) used to encrypt"
		case errors.Is(err, keyring.ErrUnknownKey):
			hint = "the value was sealed under a key this keyring does not hold"
		case errors.Is(err, keyring.ErrKeyDisabled):
			hint = "enable the key with 'ward keyring enable KEY-ID'"
		}
		return cli.Failed(err, hint)
	}
	_, err = a.stdout.Write(pt)
	clear(pt)
	return err
}

// isEnvelope reports whether in is an envelope, text or binary.
func isEnvelope(in []byte) bool {
	t := bytes.TrimSpace(in)
	return bytes.HasPrefix(t, []byte(kms.EnvelopeTextPrefix)) || (len(in) > 0 && in[0] == kms.EnvelopeVersion)
}

// envelopeSeal is encrypt --envelope.
func (a *app) envelopeSeal(cmd *cobra.Command, cf *contextFlags, ec map[string]string, binary bool) error {
	ks, err := a.keyService(cmd.Context())
	if err != nil {
		return err
	}
	ad, err := cf.bytes(nil)
	if err != nil {
		return err
	}
	in, err := readInput(a.stdin)
	if err != nil {
		return err
	}
	ct, err := kms.NewEnvelope(ks, kms.EnvelopeOptions{}).Seal(cmd.Context(), in, ad, ec)
	clear(in)
	if err != nil {
		return err
	}
	if binary {
		_, err = a.stdout.Write(ct)
		return err
	}
	_, err = fmt.Fprintln(a.stdout, kms.EncodeEnvelopeText(ct))
	return err
}

// envelopeOpen is decrypt of an envelope.
func (a *app) envelopeOpen(cmd *cobra.Command, cf *contextFlags, ec map[string]string, in []byte) error {
	ks, err := a.keyService(cmd.Context())
	if err != nil {
		return err
	}
	ad, err := cf.bytes(nil)
	if err != nil {
		return err
	}
	ct := in
	if !bytes.HasPrefix(in, []byte{kms.EnvelopeVersion}) {
		if ct, err = kms.DecodeEnvelopeText(string(in)); err != nil {
			return cli.Failed(err, "")
		}
	}
	pt, err := kms.NewEnvelope(ks, kms.EnvelopeOptions{}).Open(cmd.Context(), ct, ad, ec)
	if errors.Is(err, kms.ErrAuthentication) || errors.Is(err, kms.ErrMalformed) || errors.Is(err, kms.ErrInvalidCiphertext) {
		return cli.Failed(err, "pass the same --context (or --table/--column/--row) and --ec used to encrypt, and the same --kms key")
	}
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(pt)
	clear(pt)
	return err
}

// grantOpen is decrypt with a grant file: the column's v4 values open, any
// other column's fail.
func (a *app) grantOpen(cmd *cobra.Command, cf *contextFlags, in []byte) error {
	if cf.table == "" {
		return cli.Usage(errors.New("--grant needs --table, --column and --row"), "a grant opens the columns it names")
	}
	ks, err := a.keyService(cmd.Context())
	if err != nil {
		return err
	}
	g, err := keyring.LoadGrant(cmd.Context(), cf.grant, ks)
	if err != nil {
		if errors.Is(err, keyring.ErrWrongWrapper) {
			return cli.Usage(err, "the grant is sealed under the reader's key: check --kms, "+local.EnvVar+" or --master-key-file")
		}
		return err
	}
	ct := in
	if keyring.IsText(in) {
		if ct, err = keyring.DecodeText(string(bytes.TrimSpace(in))); err != nil {
			return cli.Failed(err, "")
		}
	}
	col, row, err := cf.grantColumn(g)
	if err != nil {
		return err
	}
	pt, err := col.AppendOpen(nil, row, ct)
	if err != nil {
		hint := ""
		switch {
		case errors.Is(err, keyring.ErrWrongContext):
			hint = "a grant opens the values of its own columns, in the rows they were sealed for"
		case errors.Is(err, keyring.ErrNotGranted):
			hint = "a grant opens ciphertext v4 only: 'ward reseal' moves a column to v4"
		case errors.Is(err, keyring.ErrUnknownKey):
			hint = "the value is sealed under a key added after the grant was issued: ask for a new grant"
		}
		return cli.Failed(err, hint)
	}
	_, err = a.stdout.Write(pt)
	clear(pt)
	return err
}

// grantColumn is fieldColumn for a grant's column.
func (f *contextFlags) grantColumn(g *keyring.Grant) (*field.Column, field.RowKey, error) {
	kr, _ := keyring.New(keyring.DefaultAlgorithm) // builds and checks the flags only
	if _, row, err := f.fieldColumn(kr); err != nil {
		return nil, row, err
	}
	var names []string
	var values []any
	for _, b := range f.bind {
		name, value, _ := strings.Cut(b, "=")
		names, values = append(names, name), append(values, value)
	}
	var opts []field.ColumnOption
	if names != nil {
		opts = append(opts, field.Bind(names...))
	}
	if f.gate != nil {
		opts = append(opts, field.WithForms(f.gate))
	}
	col, err := field.GrantColumn(g, f.table, f.column, opts...)
	if err != nil {
		return nil, field.RowKey{}, cli.Failed(err, "the grant names other columns: see its scopes")
	}
	return col, field.RowString(f.row).With(values...), nil
}
