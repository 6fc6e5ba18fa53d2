package pqtls

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var testChains = map[CertAlg]*Chain{}

func chain(t testing.TB, a CertAlg) *Chain {
	t.Helper()
	if c := testChains[a]; c != nil {
		return c
	}
	c, err := GenerateChain(a)
	if err != nil {
		t.Fatal(err)
	}
	testChains[a] = c
	return c
}

// TestGroupsAndChains handshakes every group with every chain and checks
// from ConnectionState what was negotiated, then resumes with a ticket.
func TestGroupsAndChains(t *testing.T) {
	ctx := context.Background()
	for _, alg := range CertAlgs() {
		c := chain(t, alg)
		if err := c.Leaf.CheckSignatureFrom(c.Intermediate); err != nil {
			t.Fatalf("%v: leaf not signed by intermediate: %v", alg, err)
		}
		for name, g := range Groups {
			scfg := &tls.Config{Certificates: []tls.Certificate{c.Certificate}, CurvePreferences: []tls.CurveID{g}}
			addr, stop, err := newTestServer(scfg)
			if err != nil {
				t.Fatal(err)
			}
			ccfg := &tls.Config{RootCAs: c.Roots, ServerName: "localhost", CurvePreferences: []tls.CurveID{g},
				ClientSessionCache: tls.NewLRUClientSessionCache(4), MinVersion: tls.VersionTLS13}
			m, err := Dial(ctx, addr, ccfg)
			if !Approved(g) { // the FIPS 140-3 mode refuses it
				if err == nil || !strings.Contains(err.Error(), "no supported key exchange") {
					t.Fatalf("%v/%s in the FIPS 140-3 mode: %v, want a refusal", alg, name, err)
				}
				stop()
				continue
			}
			if err != nil {
				t.Fatalf("%v/%s: %v", alg, name, err)
			}
			if m.State.CurveID != g || m.State.DidResume || m.State.Version != tls.VersionTLS13 {
				t.Fatalf("%v/%s: negotiated %s", alg, name, Describe(m.State))
			}
			if m.BytesDown < c.WireBytes {
				t.Fatalf("%v/%s: %d bytes down, chain alone is %d", alg, name, m.BytesDown, c.WireBytes)
			}
			r, err := Dial(ctx, addr, ccfg)
			if err != nil || !r.State.DidResume {
				t.Fatalf("%v/%s: resumption: %v", alg, name, err)
			}
			if r.BytesDown >= m.BytesDown {
				t.Fatalf("%v/%s: resumed handshake not smaller (%d >= %d)", alg, name, r.BytesDown, m.BytesDown)
			}
			stop()
		}
	}
}

func TestExtraRoundTrips(t *testing.T) {
	for _, tc := range []struct{ flight, extra int }{{1000, 0}, {14600, 0}, {14601, 1}, {43800, 1}, {43801, 2}, {0, 0}} {
		if got := ExtraRoundTrips(tc.flight, InitialWindow); got != tc.extra {
			t.Errorf("%d bytes: %d extra round trips, want %d", tc.flight, got, tc.extra)
		}
	}
}

func startServer(t *testing.T, o ServerOptions) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, tl, err := NewServer(ln, o)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tl)
	return ln.Addr().String(), func() { srv.Close() }
}

// TestServerPage fetches /json over HTTPS with a post-quantum group and,
// from a server that admits them, with a classical one.
func TestServerPage(t *testing.T) {
	c := chain(t, ECDSAP256)
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{c}, AllowClassical: true})
	defer stop()
	for _, g := range []tls.CurveID{tls.X25519MLKEM768, tls.X25519} {
		if !Approved(g) { // the FIPS 140-3 mode: a classical NIST curve instead
			if _, err := fetchNegotiated(addr, c, &tls.Config{CurvePreferences: []tls.CurveID{g}}); err == nil {
				t.Fatalf("%v in the FIPS 140-3 mode: negotiated", g)
			}
			g = tls.CurveP256
		}
		n, err := fetchNegotiated(addr, c, &tls.Config{CurvePreferences: []tls.CurveID{g}})
		if err != nil {
			t.Fatal(err)
		}
		if n.Group != g.String() || n.PostQuantum != IsPostQuantum(g) || n.Version != "TLS 1.3" || n.SignatureScheme != "ecdsa_secp256r1_sha256" || !n.ClassicalAllowed {
			t.Fatalf("%v: %+v", g, n)
		}
	}
}

// fetchNegotiated GETs /json from addr with a client configured as cfg
// (trusting c) and returns what the server reports.
func fetchNegotiated(addr string, c *Chain, cfg *tls.Config) (Negotiated, error) {
	cfg.RootCAs = c.Roots
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/json")
	if err != nil {
		return Negotiated{}, err
	}
	defer resp.Body.Close()
	var n Negotiated
	return n, json.NewDecoder(resp.Body).Decode(&n)
}

// TestServerPostQuantumOnly: by default the server speaks TLS 1.3 with
// ML-KEM groups only: a TLS 1.2 client and a client offering only X25519
// or P-256 fail the handshake, a classical group asked for without
// AllowClassical is refused at start, and the page says which mode it is
// in. With AllowClassical the classical clients connect, TLS 1.2 still
// does not.
func TestServerPostQuantumOnly(t *testing.T) {
	c := chain(t, ECDSAP256)
	if _, _, err := NewServer(nil, ServerOptions{Chains: []*Chain{c}, Groups: []tls.CurveID{tls.X25519MLKEM768, tls.X25519}}); !errors.Is(err, ErrClassicalGroup) {
		t.Fatalf("X25519 without AllowClassical: %v", err)
	}
	for _, allow := range []bool{false, true} {
		addr, stop := startServer(t, ServerOptions{Chains: []*Chain{c}, AllowClassical: allow})
		if _, err := fetchNegotiated(addr, c, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
			t.Fatalf("allow classical %v: a TLS 1.2 client connected", allow)
		}
		for _, g := range []tls.CurveID{tls.X25519, tls.CurveP256} {
			n, err := fetchNegotiated(addr, c, &tls.Config{CurvePreferences: []tls.CurveID{g}})
			switch {
			case !allow && err == nil:
				t.Fatalf("a client offering only %v negotiated %+v", g, n)
			case allow && Approved(g) && (err != nil || n.Group != g.String() || !n.ClassicalAllowed):
				t.Fatalf("allow classical: %v: %+v %v", g, n, err)
			}
		}
		n, err := fetchNegotiated(addr, c, &tls.Config{})
		if err != nil || !n.PostQuantum || n.ClassicalAllowed != allow {
			t.Fatalf("allow classical %v: a default client: %+v %v", allow, n, err)
		}
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Roots}}}).Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]string{false: "post-quantum key exchange only", true: "also accepts classical key exchange"}[allow]; !strings.Contains(string(page), want) {
			t.Fatalf("allow classical %v: the page does not say %q", allow, want)
		}
		stop()
	}
}

// TestServerBadClients: unsupported groups, a stalled client, a
// truncated ClientHello and 1,000 idle connections; the server keeps
// serving others and leaks no goroutines.
func TestServerBadClients(t *testing.T) {
	before := runtime.NumGoroutine()
	c := chain(t, ECDSAP256)
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{c}, HandshakeTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, MaxConns: 2000, MaxConnsPerAddress: 2000})
	good := func() error {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Roots}}}
		defer client.CloseIdleConnections()
		resp, err := client.Get("https://" + addr + "/json")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	// Only groups the server does not offer: the handshake fails cleanly.
	srvP384 := ServerOptions{Chains: []*Chain{c}, Groups: []tls.CurveID{tls.CurveP384}, AllowClassical: true}
	addr2, stop2 := startServer(t, srvP384)
	conn, err := tls.Dial("tcp", addr2, &tls.Config{RootCAs: c.Roots, ServerName: "localhost", CurvePreferences: []tls.CurveID{tls.X25519MLKEM768},
		MinVersion: tls.VersionTLS13})
	if err == nil {
		conn.Close()
		t.Fatal("handshake with no common group succeeded")
	}
	stop2()
	var idle []net.Conn
	for range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// A truncated ClientHello, then silence.
	trunc, _ := net.Dial("tcp", addr)
	trunc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01})
	if err := good(); err != nil {
		t.Fatalf("a good client while 1,000 idle connections wait: %v", err)
	}
	// The stalled connections are closed by the handshake timeout.
	time.Sleep(700 * time.Millisecond)
	buf := make([]byte, 1)
	trunc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := trunc.Read(buf); err == nil {
		t.Fatal("truncated ClientHello got data back")
	}
	for _, c := range idle {
		c.Close()
	}
	trunc.Close()
	stop()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines before, %d after", before, n)
	}
}

// TestServerPerAddressCap: a hundred idle sockets from one address hold
// at most its share of the slots; a browser from another address is
// served while they still hold theirs (their first-byte timeout, a
// minute, is longer than the browser's own deadline, so it cannot have
// waited one out). No duration is asserted: the deadlines catch a hang.
func TestServerPerAddressCap(t *testing.T) {
	c := chain(t, ECDSAP256)
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{c}, MaxConns: 32, MaxConnsPerAddress: 8, FirstByteTimeout: time.Minute})
	defer stop()
	var idle []net.Conn
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			idle = append(idle, c)
		}
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{RootCAs: c.Roots}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + addr + "/json")
	if err != nil {
		t.Fatalf("a browser beside the idle sockets: %v", err)
	}
	resp.Body.Close()
}

// TestServerDropsIdleSocket: a socket that sends nothing is dropped after
// the first-byte timeout (the read's deadline, far longer, catches a hang).
func TestServerDropsIdleSocket(t *testing.T) {
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{chain(t, ECDSAP256)}, MaxConns: 32, MaxConnsPerAddress: 8, FirstByteTimeout: 300 * time.Millisecond})
	defer stop()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the idle socket was kept: %v", err)
	}
}

// newTestServer serves TLS on a loopback listener: each connection
// handshakes, receives one byte (so the client processes its session
// ticket) and is closed. It returns the address and a stop function.
func newTestServer(cfg *tls.Config) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				tc := tls.Server(c, cfg)
				if tc.Handshake() == nil {
					tc.Write([]byte{1})
				}
			}()
		}
	}()
	return ln.Addr().String(), func() {
		select {
		case <-done:
		default:
			close(done)
			ln.Close()
			wg.Wait()
		}
	}, nil
}
