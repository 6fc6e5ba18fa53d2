package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/pq/handshake"
)

func (a *app) newHandshakeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "handshake",
		Short: "Measure post-quantum key exchange between two processes or hosts",
		Long: `Run ward's minimal key-exchange protocol (X25519, ML-KEM, hybrid, and
ML-DSA-signed suites) between 'ward-pq handshake serve' and 'ward-pq handshake dial',
for example between two machines or regions instead of simulated delay.`,
	}
	cmd.AddCommand(a.newHandshakeServeCmd(), a.newHandshakeDialCmd())
	return cmd
}

type serveOptions struct {
	listen          string
	suites          []string
	backend         string
	keyFile         string
	maxConns        int
	maxConnsPerAddr int
	timeout, hello  time.Duration
}

// keyFileDoc is the JSON file of ML-DSA seeds written with --key-file: the
// seeds are secret, the file is created with mode 0600.
type keyFileDoc struct {
	Seeds map[string]string `json:"mldsa_seeds"`
}

func loadOrCreateKeys(path string) ([]*handshake.SigningKey, error) {
	algs := []handshake.Sig{handshake.MLDSA44, handshake.MLDSA65, handshake.MLDSA87}
	var keys []*handshake.SigningKey
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			var doc keyFileDoc
			if err := json.Unmarshal(b, &doc); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for _, alg := range algs {
				seed, err := base64.StdEncoding.DecodeString(doc.Seeds[alg.String()])
				if err != nil {
					return nil, fmt.Errorf("%s: bad %v seed", path, alg)
				}
				k, err := handshake.NewSigningKey(alg, seed)
				if err != nil {
					return nil, err
				}
				keys = append(keys, k)
			}
			return keys, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	doc := keyFileDoc{Seeds: map[string]string{}}
	for _, alg := range algs {
		k, err := handshake.GenerateSigningKey(alg)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		doc.Seeds[alg.String()] = base64.StdEncoding.EncodeToString(k.Seed())
	}
	if path != "" {
		b, _ := json.MarshalIndent(doc, "", "  ")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (a *app) newHandshakeServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--suite S]...",
		Short: "Answer handshakes; prints the ML-DSA key fingerprints to pin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			backend, err := handshake.ParseBackend(o.backend)
			if err != nil {
				return cli.Usage(err, "")
			}
			cfg := &handshake.ServerConfig{Backend: backend, Timeout: o.timeout, HelloTimeout: o.hello}
			for _, s := range o.suites {
				suite, err := handshake.ParseSuite(s)
				if err != nil {
					return cli.Usage(err, "")
				}
				cfg.Suites = append(cfg.Suites, suite)
			}
			if cfg.Keys, err = loadOrCreateKeys(o.keyFile); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", o.listen)
			if err != nil {
				return cli.Usage(err, "")
			}
			fmt.Fprintf(a.stdout, "listening on %s (backend %v)\n", ln.Addr(), backend)
			for _, k := range cfg.Keys {
				fp := k.Fingerprint()
				fmt.Fprintf(a.stdout, "%v fingerprint: %x\n", k.Algorithm(), fp)
			}
			if f, ok := a.stdout.(*os.File); ok {
				f.Sync()
			}
			log := newLineLimiter(a.stderr, 10)
			opts := handshake.ServeOptions{MaxConns: o.maxConns, MaxConnsPerAddress: o.maxConnsPerAddr}
			err = handshake.Serve(cmd.Context(), ln, cfg, opts, func(c net.Conn, r *handshake.Result, err error) {
				if err != nil {
					log.printf("%s: %v", c.RemoteAddr(), err)
				} else {
					log.printf("%s: %v, %d B in, %d B out, crypto %v", c.RemoteAddr(), r.Suite,
						r.Stats.BytesReceived, r.Stats.BytesSent, r.Stats.CryptoTime.Round(time.Microsecond))
				}
				c.Close()
			})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:7443", "address to listen on")
	f.StringSliceVar(&o.suites, "suite", nil, "suites to accept (default: all)")
	f.StringVar(&o.backend, "backend", "stdlib", "stdlib or circl")
	f.StringVar(&o.keyFile, "key-file", "", "file of ML-DSA seeds to reuse (created, mode 0600, if missing); default: new keys each start")
	f.IntVar(&o.maxConns, "max-conns", handshake.DefaultMaxConns, "open connections (the oldest idle one makes room for a new client)")
	f.IntVar(&o.maxConnsPerAddr, "max-conns-per-addr", handshake.DefaultMaxConnsPerAddress, "open connections per client prefix (IPv4 /24, IPv6 /64)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-handshake deadline")
	f.DurationVar(&o.hello, "hello-timeout", handshake.DefaultHelloTimeout, "deadline for a client's first message")
	return cmd
}

type dialOptions struct {
	suite, backend   string
	runs             int
	pin, pinKeyFile  string
	insecure, asJSON bool
	timeout          time.Duration
}

// dialRun is one measured handshake, with the lab's handshake columns.
type dialRun struct {
	Mode            string  `json:"mode"`
	Suite           string  `json:"suite"`
	Backend         string  `json:"backend"`
	Run             int     `json:"run"`
	ConnectMs       float64 `json:"connect_ms"`
	HandshakeTimeMs float64 `json:"handshake_time_ms"`
	ClientCryptoMs  float64 `json:"client_crypto_ms"`
	BytesUp         int     `json:"bytes_up"`
	BytesDown       int     `json:"bytes_down"`
	WireBytes       int     `json:"wire_bytes"`
	Flights         int     `json:"flights"`
}

func (a *app) newHandshakeDialCmd() *cobra.Command {
	var o dialOptions
	cmd := &cobra.Command{
		Use:   "dial ADDR --suite S [--runs N] [--pin FINGERPRINT] [--json]",
		Short: "Run handshakes against 'ward-pq handshake serve' and report time and bytes",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.dial(cmd.Context(), args[0], &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.suite, "suite", "x25519+mlkem768", "suite, for example x25519, mlkem768, x25519+mlkem768, mlkem768+mldsa65")
	f.StringVar(&o.backend, "backend", "stdlib", "stdlib or circl")
	f.IntVar(&o.runs, "runs", 10, "handshakes to run")
	f.StringVar(&o.pin, "pin", "", "the server's ML-DSA key fingerprint (hex, as 'serve' prints it)")
	f.StringVar(&o.pinKeyFile, "pin-key", "", "file holding the server's ML-DSA public key (raw); the key is then not sent")
	f.BoolVar(&o.insecure, "insecure-skip-pin", false, "accept any server key (measures cost, authenticates nothing)")
	f.BoolVar(&o.asJSON, "json", false, "print every run and the summary as JSON")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-handshake deadline")
	return cmd
}

func (a *app) dial(ctx context.Context, addr string, o *dialOptions) error {
	suite, err := handshake.ParseSuite(o.suite)
	if err != nil {
		return cli.Usage(err, "")
	}
	if suite.Sig == handshake.SigNone {
		fmt.Fprintf(a.stderr, "ward-pq: warning: %v is unsigned: it keeps the key secret from eavesdroppers but authenticates nobody; anyone in the middle can answer instead of the server (use a +mldsa suite with --pin)\n", suite)
	} else if o.insecure {
		fmt.Fprintln(a.stderr, "ward-pq: warning: --insecure-skip-pin accepts any server key: the handshake authenticates nobody")
	}
	backend, err := handshake.ParseBackend(o.backend)
	if err != nil {
		return cli.Usage(err, "")
	}
	cfg := &handshake.ClientConfig{Suite: suite, Backend: backend, Timeout: o.timeout, InsecureSkipPin: o.insecure}
	if o.pin != "" {
		fp, err := hex.DecodeString(strings.TrimSpace(o.pin))
		if err != nil || len(fp) != 32 {
			return cli.Usage(errors.New("--pin must be 64 hex digits"), "copy the fingerprint 'ward-pq handshake serve' prints")
		}
		cfg.PinnedFingerprint = fp
	}
	if o.pinKeyFile != "" {
		if cfg.PinnedKey, err = os.ReadFile(o.pinKeyFile); err != nil {
			return cli.Usage(err, "")
		}
	}
	if suite.Sig != handshake.SigNone && cfg.PinnedFingerprint == nil && cfg.PinnedKey == nil && !o.insecure {
		return cli.Usage(errors.New("a signed suite needs --pin or --pin-key"), "'ward-pq handshake serve' prints the fingerprints")
	}
	if o.runs < 1 {
		return cli.Usage(errors.New("--runs must be at least 1"), "")
	}
	var runs []dialRun
	for i := 1; i <= o.runs; i++ {
		d, err := handshake.Dial(ctx, addr, cfg, nil)
		if err != nil {
			if errors.Is(err, handshake.ErrBadSignature) || errors.Is(err, handshake.ErrUntrustedKey) || errors.Is(err, handshake.ErrBadFinished) {
				return cli.Failed(err, "")
			}
			return err
		}
		st := d.Result.Stats
		runs = append(runs, dialRun{Mode: suite.Family(), Suite: suite.String(), Backend: backend.String(), Run: i,
			ConnectMs: milliseconds(d.Connect), HandshakeTimeMs: milliseconds(st.Confirmed), ClientCryptoMs: milliseconds(st.CryptoTime),
			BytesUp: st.BytesSent, BytesDown: st.BytesReceived, WireBytes: st.BytesSent + st.BytesReceived, Flights: st.Flights})
	}
	var hs, conn []float64
	for _, r := range runs {
		hs = append(hs, r.HandshakeTimeMs)
		conn = append(conn, r.ConnectMs)
	}
	n, med, p05, p95 := summary(hs)
	_, cmed, _, _ := summary(conn)
	if o.asJSON {
		return a.writeJSON(map[string]any{"addr": addr, "runs": runs, "summary": map[string]any{"n": n, "handshake_time_ms": map[string]float64{"median": med, "p05": p05, "p95": p95},
			"connect_ms_median": cmed, "wire_bytes": runs[0].WireBytes}})
	}
	fmt.Fprintf(a.stdout, "%v (%v) to %s: %d runs, handshake median %.3f ms (p05 %.3f, p95 %.3f), connect median %.3f ms, %d bytes (%d up, %d down)\n",
		suite, backend, addr, n, med, p05, p95, cmed, runs[0].WireBytes, runs[0].BytesUp, runs[0].BytesDown)
	return nil
}
