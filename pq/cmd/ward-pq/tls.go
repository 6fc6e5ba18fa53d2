package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/pq/pqtls"
)

func (a *app) newTLSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "Real TLS 1.3 with post-quantum key exchange: serve a page that shows what a browser negotiated, or measure a server",
	}
	cmd.AddCommand(a.newTLSServeCmd(), a.newTLSDialCmd())
	return cmd
}

func parseGroups(names []string) ([]tls.CurveID, error) {
	var out []tls.CurveID
	for _, n := range names {
		g, ok := pqtls.Groups[n]
		if !ok {
			return nil, fmt.Errorf("unknown group %q (X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, MLKEM1024, X25519, P256)", n)
		}
		out = append(out, g)
	}
	return out, nil
}

func (a *app) newTLSServeCmd() *cobra.Command {
	var (
		listen            string
		groups            []string
		certs             []string
		maxConns, perAddr int
		hsTO, firstByte   time.Duration
		allowClassical    bool
	)
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--group G]... [--cert ALG]...",
		Short: "HTTPS page showing the negotiated TLS version, key exchange, cipher suite, certificate and resumption",
		Long: `Serve an HTTPS page (and /json) that shows what each client negotiated. The
server speaks TLS 1.3 only and, by default, offers the post-quantum groups
only (the hybrids with ML-KEM and pure ML-KEM): a client without
post-quantum TLS fails the handshake. --allow-classical also offers X25519
and the NIST curves, after them, and the page says so. The chain is ECDSA
P-256 by default, which browsers accept (they do not accept ML-DSA
certificates yet). The chain is generated at start; point a browser at the
address and accept the certificate warning, or use --cert mldsa65 with ward's
own clients.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gs, err := parseGroups(groups)
			if err != nil {
				return cli.Usage(err, "")
			}
			if len(gs) == 0 {
				gs = nil
			}
			var chains []*pqtls.Chain
			for _, c := range certs {
				alg, err := pqtls.ParseCertAlg(c)
				if err != nil {
					return cli.Usage(err, "")
				}
				ch, err := pqtls.GenerateChain(alg)
				if err != nil {
					return err
				}
				chains = append(chains, ch)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return cli.Usage(err, "")
			}
			srv, tl, err := pqtls.NewServer(ln, pqtls.ServerOptions{Groups: gs, Chains: chains, MaxConns: maxConns,
				MaxConnsPerAddress: perAddr, HandshakeTimeout: hsTO, FirstByteTimeout: firstByte, AllowClassical: allowClassical})
			if errors.Is(err, pqtls.ErrClassicalGroup) {
				ln.Close()
				return cli.Usage(err, "add --allow-classical to offer a group without ML-KEM")
			}
			if err != nil {
				ln.Close()
				return err
			}
			fmt.Fprintf(a.stdout, "serving https://%s/ (TLS 1.3, %s; certificates: %s)\n", ln.Addr(), serveMode(allowClassical), strings.Join(certs, ", "))
			go func() {
				<-cmd.Context().Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				srv.Shutdown(ctx)
			}()
			if err := srv.Serve(tl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8443", "address to listen on")
	f.StringSliceVar(&groups, "group", nil, "key exchange groups in preference order (default: the post-quantum ones; with --allow-classical, all, post-quantum first)")
	f.BoolVar(&allowClassical, "allow-classical", false, "also accept key exchanges without ML-KEM (X25519, P-256...), for clients without post-quantum TLS; the page says so")
	f.StringSliceVar(&certs, "cert", []string{"ecdsa-p256"}, "certificate chains: ecdsa-p256, ed25519, rsa2048, mldsa44, mldsa65, mldsa87")
	f.IntVar(&maxConns, "max-conns", 8192, "simultaneous connections (the oldest idle one makes room for a new client)")
	f.IntVar(&perAddr, "max-conns-per-addr", 64, "simultaneous connections per client prefix (IPv4 /24, IPv6 /64)")
	f.DurationVar(&firstByte, "first-byte-timeout", 2*time.Second, "deadline for a connection's first byte")
	f.DurationVar(&hsTO, "handshake-timeout", 5*time.Second, "TLS handshake and request header deadline")
	return cmd
}

// serveMode names the key exchanges 'tls serve' accepts.
func serveMode(allowClassical bool) string {
	if allowClassical {
		return "classical key exchange allowed"
	}
	return "post-quantum key exchange only"
}

// tlsDialOptions are the flags of 'ward-pq tls dial'.
type tlsDialOptions struct {
	groups     []string
	runs       int
	insecure   bool
	resume     bool
	serverName string
	asJSON     bool
	timeout    time.Duration
}

// tlsRun is one measured handshake as 'ward-pq tls dial --json' prints it.
type tlsRun struct {
	Run             int     `json:"run"`
	ConnectMs       float64 `json:"connect_ms"`
	HandshakeTimeMs float64 `json:"handshake_time_ms"`
	BytesUp         int     `json:"bytes_up"`
	BytesDown       int     `json:"bytes_down"`
	Flights         int     `json:"flights"`
	Version         string  `json:"version"`
	Group           string  `json:"group"`
	PostQuantum     bool    `json:"post_quantum"`
	CipherSuite     string  `json:"cipher_suite"`
	Certificate     string  `json:"certificate"`
	Resumed         bool    `json:"resumed"`
	ExtraRTTModel   int     `json:"extra_round_trips_cwnd_model"`
}

func newTLSRun(i int, m *pqtls.Measurement) tlsRun {
	st := m.State
	return tlsRun{Run: i, ConnectMs: milliseconds(m.Connect), HandshakeTimeMs: milliseconds(m.Handshake),
		BytesUp: m.BytesUp, BytesDown: m.BytesDown, Flights: m.Flights, Version: tls.VersionName(st.Version), Group: st.CurveID.String(),
		PostQuantum: pqtls.IsPostQuantum(st.CurveID), CipherSuite: tls.CipherSuiteName(st.CipherSuite), Certificate: pqtls.LeafAlgorithm(st),
		Resumed: st.DidResume, ExtraRTTModel: pqtls.ExtraRoundTrips(m.BytesDown, pqtls.InitialWindow)}
}

func (a *app) newTLSDialCmd() *cobra.Command {
	var o tlsDialOptions
	cmd := &cobra.Command{
		Use:   "dial ADDR [--group G] [--runs N] [--resume] [--json]",
		Short: "Measure TLS handshakes against any server: time, bytes, flights, what was negotiated",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.tlsDial(cmd.Context(), args[0], &o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.groups, "group", nil, "key exchange groups to offer (default: Go's defaults)")
	f.IntVar(&o.runs, "runs", 10, "handshakes")
	f.BoolVar(&o.insecure, "insecure", false, "do not verify the certificate (test servers)")
	f.BoolVar(&o.resume, "resume", false, "reuse session tickets after the first handshake")
	f.StringVar(&o.serverName, "server-name", "", "SNI and verification name (default: ADDR's host)")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-handshake deadline")
	return cmd
}

func (a *app) tlsDial(ctx context.Context, addr string, o *tlsDialOptions) error {
	gs, err := parseGroups(o.groups)
	if err != nil {
		return cli.Usage(err, "")
	}
	if o.runs < 1 {
		return cli.Usage(errors.New("--runs must be at least 1"), "")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usage(err, "ADDR is host:port")
	}
	if o.serverName == "" {
		o.serverName = host
	}
	var cache tls.ClientSessionCache
	if o.resume {
		cache = tls.NewLRUClientSessionCache(4)
	}
	cfg := func() *tls.Config {
		return &tls.Config{ServerName: o.serverName, CurvePreferences: gs, InsecureSkipVerify: o.insecure, ClientSessionCache: cache}
	}
	ms, err := pqtls.DialRuns(ctx, addr, cfg, o.runs, o.timeout, nil)
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return cli.Failed(err, "the server's certificate is signed by no authority this machine trusts: a test server's self-signed one ('ward-pq tls serve') is accepted with --insecure, which verifies nothing")
	}
	if err != nil {
		return err
	}
	var rows []tlsRun
	var hs []float64
	for i, m := range ms {
		rows = append(rows, newTLSRun(i+1, m))
		hs = append(hs, rows[i].HandshakeTimeMs)
	}
	n, med, p05, p95 := summary(hs)
	if o.asJSON {
		return a.writeJSON(map[string]any{"addr": addr, "runs": rows,
			"summary": map[string]any{"n": n, "handshake_time_ms": map[string]float64{"median": med, "p05": p05, "p95": p95}}})
	}
	r := rows[len(rows)-1]
	fmt.Fprintf(a.stdout, "%s: %s, %s (post-quantum %v), %s, certificate %s, resumed %v\n", addr, r.Version, r.Group, r.PostQuantum, r.CipherSuite, r.Certificate, r.Resumed)
	fmt.Fprintf(a.stdout, "%d runs: handshake median %.3f ms (p05 %.3f, p95 %.3f); %d bytes up, %d down, %d flights; slow-start model: +%d round trips\n",
		n, med, p05, p95, r.BytesUp, r.BytesDown, r.Flights, r.ExtraRTTModel)
	return nil
}
