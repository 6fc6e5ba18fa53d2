package pqtls

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"time"

	"github.com/wardlab/ward/conncap"
)

// ServerOptions configure an HTTPS server that reports what each client
// negotiated.
type ServerOptions struct {
	// Groups are the key exchanges offered, in preference order (default
	// PostQuantumGroups; with AllowClassical, AllGroups: post-quantum
	// first).
	Groups []tls.CurveID
	// AllowClassical admits key exchanges without ML-KEM (X25519, the NIST
	// curves) for clients that speak no post-quantum TLS; the page says
	// so. Without it a classical group in Groups is refused by NewServer
	// (ErrClassicalGroup) and a client offering only classical groups fails
	// the handshake. The server speaks TLS 1.3 only, either way.
	AllowClassical bool
	// Chains are the certificate chains served; crypto/tls picks the first
	// one the client can verify the signature of.
	Chains []*Chain
	// MaxConns caps simultaneous connections (default 8192), and
	// MaxConnsPerAddress those of one client prefix, an IPv4 /24 or an
	// IPv6 /64 (default 64). At a cap, the oldest idle connection (no
	// byte yet, or keep-alive between requests) is closed to admit a new
	// one; only when all are busy is the new one refused.
	MaxConns, MaxConnsPerAddress int
	// FirstByteTimeout bounds the wait for a connection's first byte (the
	// ClientHello), default 2 s: a socket that says nothing holds its slot
	// only that long.
	FirstByteTimeout time.Duration
	// HandshakeTimeout bounds the TLS handshake and the request header
	// (default 5 s); IdleTimeout bounds keep-alive (default 30 s).
	HandshakeTimeout, IdleTimeout time.Duration
}

// Negotiated is what the page reports.
type Negotiated struct {
	Version         string `json:"version"`
	Group           string `json:"group"`
	PostQuantum     bool   `json:"post_quantum"`
	CipherSuite     string `json:"cipher_suite"`
	Certificate     string `json:"certificate"`
	SignatureScheme string `json:"signature_scheme"`
	Resumed         bool   `json:"resumed"`
	ServerName      string `json:"server_name"`
	ALPN            string `json:"alpn"`
	// ClassicalAllowed reports that the server also accepts key exchanges
	// without ML-KEM (ServerOptions.AllowClassical).
	ClassicalAllowed bool `json:"classical_allowed"`
}

// ErrClassicalGroup is NewServer's refusal of a classical group offered
// without ServerOptions.AllowClassical.
var ErrClassicalGroup = errors.New("pqtls: a classical key exchange group needs AllowClassical")

// schemeFor names the TLS 1.3 signature scheme a chain's leaf key signs
// with (RSA: the PSS scheme crypto/tls prefers).
func schemeFor(a CertAlg) string {
	return map[CertAlg]string{ECDSAP256: "ecdsa_secp256r1_sha256", Ed25519: "ed25519", RSA2048: "rsa_pss_rsae_sha256",
		MLDSA44: "mldsa44", MLDSA65: "mldsa65", MLDSA87: "mldsa87"}[a]
}

// NegotiatedFrom describes a server-side connection state of a server
// serving chains (with classical groups admitted or not).
func NegotiatedFrom(st *tls.ConnectionState, chains []*Chain, classicalAllowed bool) Negotiated {
	n := Negotiated{Version: tls.VersionName(st.Version), Group: st.CurveID.String(), PostQuantum: IsPostQuantum(st.CurveID),
		CipherSuite: tls.CipherSuiteName(st.CipherSuite), Resumed: st.DidResume, ServerName: st.ServerName, ALPN: st.NegotiatedProtocol,
		ClassicalAllowed: classicalAllowed}
	if len(chains) == 1 {
		n.Certificate, n.SignatureScheme = chains[0].Alg.String(), schemeFor(chains[0].Alg)
	} else {
		n.Certificate = "one of the served chains"
	}
	return n
}

var page = template.Must(template.New("p").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ward: your TLS connection</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
.pq{color:#05603a;font-weight:700}.no{color:#a00;font-weight:700}td{padding:.2rem .6rem}</style></head>
<body><h1>Your TLS connection</h1>
{{if .PostQuantum}}<p class="pq" id="verdict">Your browser negotiated a post-quantum key exchange.</p>
{{else}}<p class="no" id="verdict">Your browser did not negotiate a post-quantum key exchange.</p>{{end}}
<table>
<tr><td>TLS version</td><td id="version">{{.Version}}</td></tr>
<tr><td>Key exchange</td><td id="group">{{.Group}}</td></tr>
<tr><td>Post-quantum</td><td id="pq">{{.PostQuantum}}</td></tr>
<tr><td>Cipher suite</td><td id="cipher">{{.CipherSuite}}</td></tr>
<tr><td>Certificate</td><td id="cert">{{.Certificate}}</td></tr>
<tr><td>Signature scheme</td><td id="sig">{{.SignatureScheme}}</td></tr>
<tr><td>Resumed</td><td id="resumed">{{.Resumed}}</td></tr>
</table>
{{if .ClassicalAllowed}}<p class="no" id="classical">This server also accepts classical key exchange (--allow-classical): a client without post-quantum TLS gets one.</p>
{{else}}<p id="classical">This server accepts post-quantum key exchange only (TLS 1.3, ML-KEM or a hybrid with it).</p>{{end}}
<p>Served by ward (Go crypto/tls). JSON: <a href="/json">/json</a>.</p></body></html>`))

// Handler serves the page at / and the JSON at /json for a server serving
// chains, with classical groups admitted or not.
func Handler(chains []*Chain, classicalAllowed bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(NegotiatedFrom(r.TLS, chains, classicalAllowed))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.Execute(w, NegotiatedFrom(r.TLS, chains, classicalAllowed))
	})
	return mux
}

// NewServer returns an http.Server and a TLS listener on ln that applies
// the options. Serve with srv.Serve(listener).
func NewServer(ln net.Listener, o ServerOptions) (*http.Server, net.Listener, error) {
	if len(o.Chains) == 0 {
		return nil, nil, fmt.Errorf("pqtls: no certificate chain")
	}
	switch {
	case o.Groups == nil && o.AllowClassical:
		o.Groups = AllGroups()
	case o.Groups == nil:
		o.Groups = PostQuantumGroups()
	case !o.AllowClassical:
		for _, g := range o.Groups {
			if !IsPostQuantum(g) {
				return nil, nil, fmt.Errorf("%w: %v", ErrClassicalGroup, g)
			}
		}
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 8192
	}
	if o.MaxConnsPerAddress <= 0 {
		o.MaxConnsPerAddress = 64
	}
	if o.FirstByteTimeout <= 0 {
		o.FirstByteTimeout = 2 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 5 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Second
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, CurvePreferences: o.Groups, NextProtos: []string{"h2", "http/1.1"}}
	for _, c := range o.Chains {
		cfg.Certificates = append(cfg.Certificates, c.Certificate)
	}
	srv := &http.Server{Handler: Handler(o.Chains, o.AllowClassical), TLSConfig: cfg, ReadHeaderTimeout: o.HandshakeTimeout,
		IdleTimeout: o.IdleTimeout, WriteTimeout: 30 * time.Second,
		ErrorLog: nil}
	capped := conncap.New(ln, conncap.Options{Total: o.MaxConns, PerPrefix: o.MaxConnsPerAddress, FirstByte: o.FirstByteTimeout})
	srv.ConnState = capped.ConnState // idle keep-alive connections make room first
	return srv, tls.NewListener(capped, cfg), nil
}
