package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/kmsurl"
)

func (a *app) newKMSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kms",
		Short: "Call a KMS directly: per-call encryption, and key information",
		Long: `Call a KMS key directly (--kms URL or WARD_KMS): 'kms encrypt' and
send every value to the KMS, as the KMS field report did. For data, prefer
'ward --kms URL encrypt --envelope' (envelope encryption: the KMS wraps a
data key once and the data is encrypted locally), or a keyring wrapped by
the KMS key ('ward --kms URL keyring new').`,
	}
	cmd.AddCommand(a.newKMSCryptCmd(true), a.newKMSCryptCmd(false), a.newKMSInfoCmd())
	return cmd
}

func (a *app) openKMS(cmd *cobra.Command) (kms.KeyService, error) {
	u := a.kmsURL()
	if u == "" {
		return nil, cli.Usage(errors.New("no KMS given"), "pass --kms URL (awskms://alias/NAME?region=R, local://PATH) or set "+KMSEnv)
	}
	ks, err := kmsurl.Open(cmd.Context(), u, a.getenv)
	if err != nil {
		return nil, cli.Usage(err, "")
	}
	return ks, nil
}

func (a *app) newKMSCryptCmd(encrypt bool) *cobra.Command {
	var ec map[string]string
	name, short := "decrypt", "KMS Decrypt of base64 from stdin, plaintext to stdout (exit 1 if it does not open)"
	if encrypt {
		name, short = "encrypt", "KMS Encrypt of stdin (at most 4 KiB), base64 to stdout"
	}
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := a.openKMS(cmd)
			if err != nil {
				return err
			}
			in, err := readInput(a.stdin)
			if err != nil {
				return err
			}
			if encrypt {
				if len(in) > 4096 {
					return cli.Usage(fmt.Errorf("KMS Encrypt takes at most 4096 bytes, got %d", len(in)), "use 'ward --kms URL encrypt --envelope' (envelope encryption) for data")
				}
				ct, err := ks.Encrypt(cmd.Context(), in, ec)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(a.stdout, base64.StdEncoding.EncodeToString(ct))
				return err
			}
			ct, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(in)))
			if err != nil {
				return cli.Failed(fmt.Errorf("input is not base64: %w", err), "")
			}
			pt, err := ks.Decrypt(cmd.Context(), ct, ec)
			if errors.Is(err, kms.ErrInvalidCiphertext) {
				return cli.Failed(err, "pass the same --ec pairs used to encrypt")
			}
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(pt)
			clear(pt)
			return err
		},
	}
	cmd.Flags().StringToStringVar(&ec, "ec", nil, "encryption context pairs, k=v,k2=v2")
	return cmd
}

func (a *app) newKMSInfoCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the KMS key, its provider, and a timed envelope round trip with cache counters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := a.openKMS(cmd)
			if err != nil {
				return err
			}
			info := map[string]any{"provider": ks.Key().Provider, "key_id": ks.Key().ID}
			if aws, ok := ks.(*awskms.Service); ok {
				arn, state, err := aws.Describe(cmd.Context())
				if err != nil {
					return err
				}
				info["arn"], info["state"] = arn, state
			}
			env := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
			ec := map[string]string{"ward": "kms-info"}
			start := time.Now()
			if _, err := env.Seal(cmd.Context(), []byte("probe"), nil, ec); err != nil {
				return err
			}
			first := time.Since(start)
			start = time.Now()
			for range 100 {
				ct, err := env.Seal(cmd.Context(), []byte("probe"), nil, ec)
				if err != nil {
					return err
				}
				if _, err := env.Open(cmd.Context(), ct, nil, ec); err != nil {
					return err
				}
			}
			warm := time.Since(start) / 100
			st := env.Stats()
			info["first_seal_ms"] = float64(first.Microseconds()) / 1000
			info["warm_seal_open_us"] = float64(warm.Nanoseconds()) / 1000
			info["cache"] = st
			info["cache_limits"] = kms.DefaultCacheLimits
			if asJSON {
				return a.writeJSON(info)
			}
			fmt.Fprintf(a.stdout, "provider:  %s\nkey:       %s\n", ks.Key().Provider, ks.Key().ID)
			if arn, ok := info["arn"]; ok {
				fmt.Fprintf(a.stdout, "arn:       %v (%v)\n", arn, info["state"])
			}
			fmt.Fprintf(a.stdout, "first seal (new data key): %.3f ms; warm seal+open: %.2f µs\n", info["first_seal_ms"], info["warm_seal_open_us"])
			fmt.Fprintf(a.stdout, "cache: %d seal hits, %d misses, %d open hits, %d KMS calls\n", st.SealHits, st.SealMisses, st.OpenHits, st.KMSCalls)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
