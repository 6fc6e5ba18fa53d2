package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/internal/cli/clitest"
	"github.com/wardlab/ward/pq/handshake"
)

// flagTests names, for every flag of ward-pq, a test that sets it and
// asserts an effect that differs from the default. TestFlagTable keeps it
// complete.
var flagTests = map[string]string{
	"ward-pq handshake dial --backend":             "TestHandshakeFlags",
	"ward-pq handshake dial --insecure-skip-pin":   "TestHandshakeFlags",
	"ward-pq handshake dial --json":                "TestHandshakeTwoProcesses",
	"ward-pq handshake dial --pin":                 "TestHandshakeTwoProcesses",
	"ward-pq handshake dial --pin-key":             "TestHandshakeFlags",
	"ward-pq handshake dial --runs":                "TestHandshakeTwoProcesses",
	"ward-pq handshake dial --suite":               "TestHandshakeTwoProcesses",
	"ward-pq handshake dial --timeout":             "TestHandshakeFlags",
	"ward-pq handshake serve --backend":            "TestHandshakeTwoProcesses",
	"ward-pq handshake serve --hello-timeout":      "TestHandshakeServerLimits",
	"ward-pq handshake serve --key-file":           "TestHandshakeFlags",
	"ward-pq handshake serve --listen":             "TestHandshakeTwoProcesses",
	"ward-pq handshake serve --max-conns":          "TestHandshakeServerLimits",
	"ward-pq handshake serve --max-conns-per-addr": "TestHandshakeServerLimits",
	"ward-pq handshake serve --suite":              "TestHandshakeFlags",
	"ward-pq handshake serve --timeout":            "TestHandshakeFlags",
	"ward-pq tls dial --group":                     "TestTLSFlags",
	"ward-pq tls dial --insecure":                  "TestTLSFlags",
	"ward-pq tls dial --json":                      "TestTLSFlags",
	"ward-pq tls dial --resume":                    "TestTLSFlags",
	"ward-pq tls dial --runs":                      "TestTLSFlags",
	"ward-pq tls dial --server-name":               "TestTLSFlags",
	"ward-pq tls dial --timeout":                   "TestTLSFlags",
	"ward-pq tls serve --allow-classical":          "TestTLSAllowClassical",
	"ward-pq tls serve --cert":                     "TestTLSFlags",
	"ward-pq tls serve --first-byte-timeout":       "TestTLSServerLimits",
	"ward-pq tls serve --group":                    "TestTLSFlags",
	"ward-pq tls serve --handshake-timeout":        "TestTLSServerLimits",
	"ward-pq tls serve --listen":                   "TestTLSFlags",
	"ward-pq tls serve --max-conns":                "TestTLSServerLimits",
	"ward-pq tls serve --max-conns-per-addr":       "TestTLSServerLimits",
}

// TestFlagTable: every flag of ward-pq has an entry in flagTests naming a
// test with a line that sets it, and every entry names a flag that exists.
func TestFlagTable(t *testing.T) {
	clitest.FlagTable(t, (&app{}).newRootCmd(), flagTests, ".")
}

// syncBuffer is a bytes.Buffer safe for a server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// serve runs a ward-pq server command in this process until the test ends
// and returns the address it printed after prefix, and its output.
func serve(t *testing.T, prefix string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- (&app{stdout: out, stderr: io.Discard}).run(ctx, args) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			if a, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSuffix(strings.Fields(a)[0], "/"), out
			}
		}
		select {
		case code := <-done:
			t.Fatalf("%v exited with %d: %s", args, code, out)
		default:
		}
	}
	t.Fatalf("%v printed no address: %s", args, out)
	return "", nil
}

// dial runs a ward-pq client command and returns its exit code, stdout and
// stderr.
func dial(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := (&app{stdout: &out, stderr: &errb}).run(context.Background(), args)
	return code, out.String(), errb.String()
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	return err == nil // EOF: closed by the server; a timeout is an error
}

// TestHandshakeFlags: the suites a server accepts, its key file and
// deadline; a client's backend, pinning by key or not at all, and its
// deadline.
func TestHandshakeFlags(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.json")
	addr, out := serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--suite", "x25519,mlkem768+mldsa65", "--key-file", keys)
	if code, _, e := dial("handshake", "dial", addr, "--suite", "mlkem768", "--runs", "1"); code == 0 {
		t.Fatalf("serve --suite x25519,mlkem768+mldsa65 accepted mlkem768: %q", e)
	}
	if code, o, e := dial("handshake", "dial", addr, "--suite", "x25519", "--runs", "1", "--backend", "circl", "--json"); code != 0 || !strings.Contains(o, `"backend": "circl"`) {
		t.Fatalf("dial --backend circl: %d %q %q", code, o, e)
	}
	// --key-file: created 0600, and a second server reuses its keys.
	if st, err := os.Stat(keys); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("serve --key-file: %v %v", st, err)
	}
	addr2, out2 := serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--key-file", keys)
	// The fingerprints follow the address line: wait for them.
	fp := func(b *syncBuffer) string {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, after, ok := strings.Cut(b.String(), "mldsa65 fingerprint: "); ok {
				if f := strings.Fields(after); len(f) > 0 && strings.Contains(after, "\n") {
					return f[0]
				}
			}
		}
		return ""
	}
	if fp(out) == "" || fp(out) != fp(out2) {
		t.Fatalf("serve --key-file did not keep the keys: %q %q", out, out2)
	}
	// Signed suites need a pin: --insecure-skip-pin goes without, and
	// --pin-key sends no key (fewer bytes down than a fingerprint pin).
	if code, _, e := dial("handshake", "dial", addr2, "--suite", "mlkem768+mldsa65", "--runs", "1"); code == 0 || !strings.Contains(e, "pin") {
		t.Fatalf("dial of a signed suite without a pin: %d %q", code, e)
	}
	if code, _, e := dial("handshake", "dial", addr2, "--suite", "mlkem768+mldsa65", "--runs", "1", "--insecure-skip-pin"); code != 0 || !strings.HasPrefix(e, "ward-pq: warning:") || !strings.Contains(e, "authenticates nobody") {
		t.Fatalf("dial --insecure-skip-pin: %d %q", code, e)
	}
	var doc keyFileDoc
	b, _ := os.ReadFile(keys)
	json.Unmarshal(b, &doc)
	seed, _ := base64.StdEncoding.DecodeString(doc.Seeds["mldsa65"])
	k, err := handshake.NewSigningKey(handshake.MLDSA65, seed)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "mldsa65.pub")
	os.WriteFile(pub, k.PublicKey(), 0o644)
	down := func(o string) int {
		var d struct {
			Runs []dialRun `json:"runs"`
		}
		json.Unmarshal([]byte(o), &d)
		if len(d.Runs) == 0 {
			return 0
		}
		return d.Runs[0].BytesDown
	}
	_, byFP, _ := dial("handshake", "dial", addr2, "--suite", "mlkem768+mldsa65", "--runs", "1", "--json", "--pin", fp(out2))
	code, byKey, e := dial("handshake", "dial", addr2, "--suite", "mlkem768+mldsa65", "--runs", "1", "--json", "--pin-key", pub)
	if code != 0 || down(byKey) == 0 || down(byKey) >= down(byFP) {
		t.Fatalf("dial --pin-key: %d, %d bytes down against %d with --pin: %q", code, down(byKey), down(byFP), e)
	}
	// Deadlines: a nanosecond is too short for any handshake.
	if code, _, e := dial("handshake", "dial", addr2, "--suite", "x25519", "--runs", "1", "--timeout", "1ns"); code == 0 {
		t.Fatalf("dial --timeout 1ns: %q", e)
	}
	addr3, _ := serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--timeout", "1ns")
	if code, _, e := dial("handshake", "dial", addr3, "--suite", "x25519", "--runs", "1"); code == 0 {
		t.Fatalf("serve --timeout 1ns answered: %q", e)
	}
}

// TestHandshakeServerLimits: a silent client is dropped after
// --hello-timeout (default 2 s); --max-conns and --max-conns-per-addr
// make the oldest idle connection give way to a new one.
func TestHandshakeServerLimits(t *testing.T) {
	addr, _ := serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--hello-timeout", "100ms")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !closedWithin(c, 1500*time.Millisecond) {
		t.Fatal("serve --hello-timeout 100ms kept a silent client for 1.5 s")
	}
	addr, _ = serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--hello-timeout", "30s", "--max-conns", "1")
	evicted(t, addr, "--max-conns")
	addr, _ = serve(t, "listening on ", "handshake", "serve", "--listen", "127.0.0.1:0", "--hello-timeout", "30s", "--max-conns-per-addr", "1")
	evicted(t, addr, "--max-conns-per-addr")
}

// evicted: with a limit of one connection, a second client makes the
// server close the first, idle one.
func evicted(t *testing.T, addr, flag string) {
	t.Helper()
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	time.Sleep(50 * time.Millisecond) // accepted, and idle
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if !closedWithin(first, 5*time.Second) {
		t.Fatalf("%s 1: the first connection was not closed for the second", flag)
	}
}

// TestTLSFlags: a server's groups, certificates and address; a client's
// groups, verification, runs, resumption, JSON, server name and deadline.
func TestTLSFlags(t *testing.T) {
	addr, _ := serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--group", "X25519MLKEM768", "--cert", "ed25519")
	if code, _, e := dial("tls", "dial", addr, "--runs", "1"); code != 1 || !strings.Contains(e, "certificate") || !strings.Contains(e, "hint:") || !strings.Contains(e, "--insecure") {
		t.Fatalf("tls dial of a self-signed server without --insecure: %d %q", code, e)
	}
	if code, _, e := dial("tls", "dial", addr, "--runs", "1", "--server-name", "other.example"); code == 0 || !strings.Contains(e, "other.example") {
		t.Fatalf("tls dial --server-name other.example: %d %q", code, e)
	}
	if code, _, e := dial("tls", "dial", addr, "--insecure", "--runs", "1", "--group", "X25519"); code == 0 {
		t.Fatalf("tls dial --group X25519 against serve --group X25519MLKEM768: %q", e)
	}
	code, o, e := dial("tls", "dial", addr, "--insecure", "--runs", "3", "--resume", "--json")
	var doc struct {
		Runs []tlsRun `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(o), &doc) != nil || len(doc.Runs) != 3 || doc.Runs[0].Resumed || !doc.Runs[2].Resumed ||
		doc.Runs[0].Group != "X25519MLKEM768" || !strings.Contains(strings.ToLower(doc.Runs[0].Certificate), "ed25519") {
		t.Fatalf("tls dial --insecure --runs 3 --resume --json: %d %q %q", code, o, e)
	}
	if code, o, _ := dial("tls", "dial", addr, "--insecure", "--runs", "2"); code != 0 || !strings.Contains(o, "resumed false") || json.Valid([]byte(o)) {
		t.Fatalf("tls dial without --resume and --json: %d %q", code, o)
	}
	if code, _, e := dial("tls", "dial", addr, "--insecure", "--runs", "1", "--timeout", "1ns"); code == 0 {
		t.Fatalf("tls dial --timeout 1ns: %q", e)
	}
}

// TestTLSAllowClassical: by default the server refuses a client offering
// only a classical group, and a classical --group; --allow-classical
// admits both, and the page says so.
func TestTLSAllowClassical(t *testing.T) {
	addr, _ := serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0")
	if code, _, e := dial("tls", "dial", addr, "--insecure", "--runs", "1", "--group", "P256"); code == 0 {
		t.Fatalf("tls dial --group P256 against a post-quantum-only server: %q", e)
	}
	if code, _, e := dial("tls", "serve", "--listen", "127.0.0.1:0", "--group", "P256"); code != 2 || !strings.Contains(e, "--allow-classical") {
		t.Fatalf("tls serve --group P256 without --allow-classical: %d %q", code, e)
	}
	addr, out := serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--allow-classical")
	if !strings.Contains(out.String(), "classical key exchange allowed") {
		t.Fatalf("tls serve --allow-classical printed %q", out)
	}
	code, o, e := dial("tls", "dial", addr, "--insecure", "--runs", "1", "--group", "P256", "--json")
	if code != 0 || !strings.Contains(o, `"group": "CurveP256"`) || !strings.Contains(o, `"post_quantum": false`) {
		t.Fatalf("tls dial --group P256 against --allow-classical: %d %q %q", code, o, e)
	}
}

// TestTLSServerLimits: a connection that sends nothing is dropped after
// --first-byte-timeout, one that stalls in its handshake after
// --handshake-timeout; --max-conns and --max-conns-per-addr make the
// oldest idle connection give way.
func TestTLSServerLimits(t *testing.T) {
	addr, _ := serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--first-byte-timeout", "100ms", "--handshake-timeout", "30s")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !closedWithin(c, 1500*time.Millisecond) {
		t.Fatal("tls serve --first-byte-timeout 100ms kept a silent client for 1.5 s")
	}
	addr, _ = serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--first-byte-timeout", "30s", "--handshake-timeout", "200ms")
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte{0x16, 0x03, 0x01}) // the start of a ClientHello, then nothing
	if !closedWithin(c2, 3*time.Second) {
		t.Fatal("tls serve --handshake-timeout 200ms kept a stalled handshake for 3 s")
	}
	addr, _ = serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--first-byte-timeout", "30s", "--max-conns", "1")
	evicted(t, addr, "--max-conns")
	addr, _ = serve(t, "serving https://", "tls", "serve", "--listen", "127.0.0.1:0", "--first-byte-timeout", "30s", "--max-conns-per-addr", "1")
	evicted(t, addr, "--max-conns-per-addr")
}
