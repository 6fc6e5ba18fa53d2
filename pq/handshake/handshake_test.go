package handshake

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func serverKeys(t testing.TB) []*SigningKey {
	t.Helper()
	var out []*SigningKey
	for _, s := range []Sig{MLDSA44, MLDSA65, MLDSA87} {
		k, err := GenerateSigningKey(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// pair runs a client and a server over real TCP on loopback.
func pair(t testing.TB, ccfg *ClientConfig, scfg *ServerConfig) (*Result, *Result, error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type out struct {
		r   *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- out{nil, err}
			return
		}
		defer c.Close()
		r, err := Server(context.Background(), c, scfg)
		ch <- out{r, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cr, cerr := Client(context.Background(), c, ccfg)
	c.Close()
	so := <-ch
	return cr, so.r, cerr, so.err
}

func keyFor(ks []*SigningKey, s Sig) *SigningKey {
	for _, k := range ks {
		if k.alg == s {
			return k
		}
	}
	return nil
}

// wantBytes is the byte-level accounting of README: primitives' sizes plus
// framing (8 bytes per frame), the 1-byte flags and two 32-byte finished
// messages.
func wantBytes(s Suite, sendKey bool) (up, down int) {
	lvl := s.KEX.MLKEMLevel()
	up = HeaderSize + 1 + HeaderSize + FinishedSize
	down = HeaderSize + HeaderSize + FinishedSize
	if lvl != 0 {
		up += encapsulationKeySizeOf[lvl]
		down += ciphertextSizeOf[lvl]
	}
	if s.KEX.HasX25519() {
		up += 32
		down += 32
	}
	if s.Sig != SigNone {
		down += HeaderSize + signatureSizeOf[s.Sig]
		if sendKey {
			down += HeaderSize + publicKeySizeOf[s.Sig]
		}
	}
	return
}

func TestAllSuitesBothBackends(t *testing.T) {
	ks := serverKeys(t)
	for _, suite := range AllSuites() {
		for _, b := range []Backend{Stdlib, Circl} {
			if !refused(t, suite, b) {
				for _, pinFull := range []bool{false, true} {
					if pinFull && suite.Sig == SigNone {
						continue
					}
					name := suite.String() + "/" + b.String()
					ccfg := &ClientConfig{Suite: suite, Backend: b}
					if k := keyFor(ks, suite.Sig); k != nil {
						if pinFull {
							ccfg.PinnedKey = k.PublicKey()
						} else {
							fp := k.Fingerprint()
							ccfg.PinnedFingerprint = fp[:]
						}
					}
					cr, sr, cerr, serr := pair(t, ccfg, &ServerConfig{Backend: b, Keys: ks})
					if cerr != nil || serr != nil {
						t.Fatalf("%s: client %v, server %v", name, cerr, serr)
					}
					if cr.Key != sr.Key || cr.Key == [32]byte{} {
						t.Fatalf("%s: keys differ", name)
					}
					up, down := wantBytes(suite, !pinFull)
					if cr.Stats.BytesSent != up || cr.Stats.BytesReceived != down || sr.Stats.BytesReceived != up || sr.Stats.BytesSent != down {
						t.Fatalf("%s: bytes up %d/%d down %d/%d, want %d %d", name, cr.Stats.BytesSent, sr.Stats.BytesReceived,
							cr.Stats.BytesReceived, sr.Stats.BytesSent, up, down)
					}
					if sr.Stats.Writes != 1 || cr.Stats.Writes != 2 {
						t.Fatalf("%s: writes server %d client %d", name, sr.Stats.Writes, cr.Stats.Writes)
					}
				}
			}
		}
	}
}

// TestOverheadBudget checks framing and confirmation stay within 128 bytes
// of the primitives' own sizes, and that the field report's byte counts are
// reproduced for the primitives.
func TestOverheadBudget(t *testing.T) {
	for _, s := range AllSuites() {
		up, down := wantBytes(s, true)
		prim := 0
		if lvl := s.KEX.MLKEMLevel(); lvl != 0 {
			prim += encapsulationKeySizeOf[lvl] + ciphertextSizeOf[lvl]
		}
		if s.KEX.HasX25519() {
			prim += 64
		}
		if s.Sig != SigNone {
			prim += publicKeySizeOf[s.Sig] + signatureSizeOf[s.Sig]
		}
		if over := up + down - prim; over > 128 {
			t.Errorf("%v: %d bytes of overhead", s, over)
		}
	}
}

// TestCrossBackend: a stdlib client with a circl server and back, which
// only works if both implement FIPS 203/204 identically.
func TestCrossBackend(t *testing.T) {
	ks := serverKeys(t)
	for _, suite := range []Suite{{MLKEM768, SigNone}, {MLKEM1024, MLDSA87}, {X25519MLKEM768, MLDSA65}, {MLKEM512, MLDSA44}} {
		for _, cb := range []Backend{Stdlib, Circl} {
			sb := Circl
			if cb == Circl {
				sb = Stdlib
			}
			if refused(t, suite, cb) || refused(t, suite, sb) { // circl is outside the FIPS 140-3 module
				continue
			}
			ccfg := &ClientConfig{Suite: suite, Backend: cb, InsecureSkipPin: true}
			cr, sr, cerr, serr := pair(t, ccfg, &ServerConfig{Backend: sb, Keys: ks})
			if cerr != nil || serr != nil || cr.Key != sr.Key {
				t.Fatalf("%v client %v server %v: %v %v", suite, cb, sb, cerr, serr)
			}
		}
	}
	// The same seed gives the same ML-DSA public key in both backends.
	for _, k := range ks {
		_, cs, _ := sigParams(k.alg)
		pub, _ := cs.DeriveKey(k.Seed())
		b, _ := pub.MarshalBinary()
		if !bytes.Equal(b, k.PublicKey()) {
			t.Fatalf("%v: circl and crypto/mldsa derive different keys", k.alg)
		}
	}
}

func TestRejections(t *testing.T) {
	ks := serverKeys(t)
	other := serverKeys(t)
	suite := Suite{MLKEM768, MLDSA65}
	fp := keyFor(other, MLDSA65).Fingerprint()
	// Wrong pinned fingerprint.
	_, _, cerr, _ := pair(t, &ClientConfig{Suite: suite, PinnedFingerprint: fp[:]}, &ServerConfig{Keys: ks})
	if !errors.Is(cerr, ErrUntrustedKey) {
		t.Fatalf("wrong fingerprint: %v", cerr)
	}
	// Wrong pinned key: the signature does not verify.
	_, _, cerr, _ = pair(t, &ClientConfig{Suite: suite, PinnedKey: keyFor(other, MLDSA65).PublicKey()}, &ServerConfig{Keys: ks})
	if !errors.Is(cerr, ErrBadSignature) {
		t.Fatalf("wrong pinned key: %v", cerr)
	}
	// A suite the server does not offer.
	_, _, cerr, serr := pair(t, &ClientConfig{Suite: Suite{MLKEM768, SigNone}}, &ServerConfig{Suites: []Suite{{MLKEM1024, SigNone}}})
	if !errors.Is(cerr, ErrUnsupportedSuite) || !errors.Is(serr, ErrUnsupportedSuite) {
		t.Fatalf("unsupported suite: %v / %v", cerr, serr)
	}
	// No key for the signature level.
	_, _, cerr, _ = pair(t, &ClientConfig{Suite: Suite{MLKEM768, MLDSA87}, InsecureSkipPin: true}, &ServerConfig{Keys: ks[:1]})
	if !errors.Is(cerr, ErrUnsupportedSuite) {
		t.Fatalf("missing key: %v", cerr)
	}
	// A signed suite without a pin is refused before connecting.
	if _, err := Client(context.Background(), nil, &ClientConfig{Suite: suite}); err == nil {
		t.Fatal("unpinned signed suite accepted")
	}
}

// rawServer runs Server against bytes written by the test, and returns
// its error.
func rawServer(t *testing.T, cfg *ServerConfig, input []byte, closeAfter bool) error {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	errc := make(chan error, 1)
	go func() { _, err := Server(context.Background(), s, cfg); s.Close(); errc <- err }()
	go io.Copy(io.Discard, c)
	c.Write(input)
	if closeAfter {
		c.Close()
	}
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("server hung")
		return nil
	}
}

func hdr(typ, version byte, suite uint16, n uint32) []byte {
	b := []byte{typ, version, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[2:], suite)
	binary.BigEndian.PutUint32(b[4:], n)
	return b
}

func TestServerBadInput(t *testing.T) {
	cfg := &ServerConfig{Keys: serverKeys(t), Timeout: 2 * time.Second}
	x := Suite{X25519, SigNone}.wire()
	for _, tc := range []struct {
		name  string
		input []byte
		want  error
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrUnsupportedVersion},
		{"truncated header", []byte{1, 1, 1}, ErrTruncated},
		{"oversized length", hdr(frameClientHello, Version, x, 1<<31), ErrFrameTooLarge},
		{"unknown version", hdr(frameClientHello, 9, x, 33), ErrUnsupportedVersion},
		{"unknown suite", hdr(frameClientHello, Version, 0x7777, 33), ErrUnsupportedSuite},
		{"wrong first frame", hdr(frameClientFinished, Version, x, 32), ErrProtocol},
		{"wrong length", hdr(frameClientHello, Version, x, 34), ErrProtocol},
		{"truncated payload", append(hdr(frameClientHello, Version, x, 33), 0, 1, 2), ErrTruncated},
		{"bad flags", append(hdr(frameClientHello, Version, x, 33), append([]byte{0x80}, make([]byte, 32)...)...), ErrProtocol},
		{"low-order x25519 point", append(hdr(frameClientHello, Version, x, 33), make([]byte, 33)...), ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if errors.Is(want, ErrProtocol) || errors.Is(want, ErrTruncated) {
				if len(tc.input) >= HeaderSize && tc.input[0] == frameClientHello && !Approved(Suite{X25519, SigNone}, Stdlib) {
					want = ErrUnsupportedSuite // the FIPS 140-3 mode refuses the X25519 hello first
				}
			}
			err := rawServer(t, cfg, tc.input, true)
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
		})
	}
}

// TestStalledPeers: a client that never answers, and a server that never
// speaks, each end in ErrTimeout within the configured deadline.
func TestStalledPeers(t *testing.T) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	start := time.Now()
	_, err := Server(context.Background(), s, &ServerConfig{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("stalled client: %v after %v", err, time.Since(start))
	}
	c2, s2 := net.Pipe()
	defer c2.Close()
	defer s2.Close()
	go io.Copy(io.Discard, s2)
	start = time.Now()
	_, err = Client(context.Background(), c2, &ClientConfig{Suite: hybrid, Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("stalled server: %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	c3, s3 := net.Pipe()
	defer c3.Close()
	defer s3.Close()
	go io.Copy(io.Discard, s3)
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := Client(ctx, c3, &ClientConfig{Suite: plain}); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestTamperedFinished flips one bit of the server's flight in transit:
// key confirmation fails on the client.
func TestTamperedFlight(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		Server(context.Background(), &flipConn{Conn: c}, &ServerConfig{Timeout: time.Second})
	}()
	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	_, err := Client(context.Background(), c, &ClientConfig{Suite: hybrid, Timeout: time.Second})
	if !errors.Is(err, ErrBadFinished) {
		t.Fatalf("tampered flight: %v", err)
	}
}

// flipConn flips the last bit of the first write (the server finished).
type flipConn struct {
	net.Conn
	done bool
}

func (f *flipConn) Write(p []byte) (int, error) {
	if !f.done {
		f.done = true
		q := bytes.Clone(p)
		q[len(q)-1] ^= 1
		return f.Conn.Write(q)
	}
	return f.Conn.Write(p)
}

// TestServeNoLeak serves many handshakes and idle connections, cancels,
// and checks every goroutine is gone.
func TestServeNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Serve(ctx, ln, &ServerConfig{Timeout: 300 * time.Millisecond}, ServeOptions{MaxConns: 8, MaxConnsPerAddress: 64}, nil)
	}()
	var idle []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Client(context.Background(), c, &ClientConfig{Suite: plain, Timeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, c := range idle {
		c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Fatalf("%d goroutines before, %d after", before, n)
	}
}

// TestIdleClientsCannotHoldServe: a hundred sockets that connect and say
// nothing, from one address, hold at most its per-address share of the
// slots; a real client from another address completes while they still
// hold theirs (their hello timeout, a minute, is longer than the client's
// own deadline, so the client cannot have waited one out). No duration is
// asserted: the deadlines only catch a hang.
func TestIdleClientsCannotHoldServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := &ServerConfig{Timeout: 10 * time.Second, HelloTimeout: time.Minute}
	go Serve(ctx, ln, cfg, ServeOptions{MaxConns: 8, MaxConnsPerAddress: 4}, nil)
	var idle []net.Conn
	for range 100 {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			idle = append(idle, c)
		}
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	}
	defer c.Close()
	if _, err := Client(context.Background(), c, &ClientConfig{Suite: plain, Timeout: 30 * time.Second}); err != nil {
		t.Fatalf("a real client beside the idle sockets: %v", err)
	}
}

// TestIdleSocketDropped: a socket that says nothing is dropped after the
// hello timeout (the read's deadline, far longer, only catches a hang).
func TestIdleSocketDropped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Serve(ctx, ln, &ServerConfig{Timeout: 10 * time.Second, HelloTimeout: 300 * time.Millisecond}, ServeOptions{MaxConns: 8, MaxConnsPerAddress: 4}, nil)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the idle socket was kept: %v", err)
	}
}

func TestParseSuite(t *testing.T) {
	for _, s := range AllSuites() {
		back, err := ParseSuite(s.String())
		if err != nil || back != s {
			t.Fatalf("%v: %v %v", s, back, err)
		}
		if w, ok := suiteFromWire(s.wire()); !ok || w != s {
			t.Fatal(s)
		}
	}
	for _, bad := range []string{"", "rsa", "mlkem768+rsa", "x25519+mldsa65+"} {
		if _, err := ParseSuite(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// FuzzServer feeds arbitrary client bytes to the server: errors only,
// never a panic or a hang.
func FuzzServer(f *testing.F) {
	ks := serverKeys(f)
	cfg := &ServerConfig{Keys: ks, Timeout: 200 * time.Millisecond}
	x := Suite{X25519, SigNone}.wire()
	f.Add(append(hdr(frameClientHello, Version, x, 33), make([]byte, 33)...))
	f.Add(hdr(frameClientHello, Version, Suite{MLKEM768, MLDSA65}.wire(), 1185))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, s := net.Pipe()
		defer c.Close()
		done := make(chan struct{})
		go func() { Server(context.Background(), s, cfg); s.Close(); close(done) }()
		go io.Copy(io.Discard, c)
		c.Write(in)
		c.Close()
		<-done
	})
}

// FuzzClient feeds arbitrary server bytes to the client.
func FuzzClient(f *testing.F) {
	f.Add(hdr(frameServerKeyShare, Version, Suite{X25519, SigNone}.wire(), 32))
	f.Add(append(hdr(frameAlert, Version, 0, 1), 2))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, s := net.Pipe()
		defer s.Close()
		go func() {
			io.ReadFull(s, make([]byte, HeaderSize+33))
			s.Write(in)
			s.Close()
		}()
		Client(context.Background(), c, &ClientConfig{Suite: plain, Timeout: 200 * time.Millisecond})
		c.Close()
	})
}

// Size tables for the tests, from the functions the protocol uses.
var (
	encapsulationKeySizeOf = map[int]int{512: encapsulationKeySize(512), 768: encapsulationKeySize(768), 1024: encapsulationKeySize(1024)}
	ciphertextSizeOf       = map[int]int{512: ciphertextSize(512), 768: ciphertextSize(768), 1024: ciphertextSize(1024)}
	publicKeySizeOf        = map[Sig]int{MLDSA44: publicKeySize(MLDSA44), MLDSA65: publicKeySize(MLDSA65), MLDSA87: publicKeySize(MLDSA87)}
	signatureSizeOf        = map[Sig]int{MLDSA44: signatureSize(MLDSA44), MLDSA65: signatureSize(MLDSA65), MLDSA87: signatureSize(MLDSA87)}
)

// TestSizesAreFIPS pins the sizes to FIPS 203 and 204.
func TestSizesAreFIPS(t *testing.T) {
	if encapsulationKeySizeOf[512] != 800 || encapsulationKeySizeOf[768] != 1184 || encapsulationKeySizeOf[1024] != 1568 ||
		ciphertextSizeOf[512] != 768 || ciphertextSizeOf[768] != 1088 || ciphertextSizeOf[1024] != 1568 ||
		publicKeySizeOf[MLDSA44] != 1312 || publicKeySizeOf[MLDSA65] != 1952 || publicKeySizeOf[MLDSA87] != 2592 ||
		signatureSizeOf[MLDSA44] != 2420 || signatureSizeOf[MLDSA65] != 3309 || signatureSizeOf[MLDSA87] != 4627 {
		t.Fatal("sizes differ from FIPS 203/204")
	}
}

// TestPrintsNoSecrets: a signing key and a result print their public
// parts under every verb, never the seed or the session key.
func TestPrintsNoSecrets(t *testing.T) {
	k, err := GenerateSigningKey(MLDSA65)
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Suite: Suite{KEX: X25519}}
	for i := range r.Key {
		r.Key[i] = 0xab
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		for _, v := range []any{k, r} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, hex.EncodeToString(k.Seed())[:16]) || strings.Contains(strings.ToLower(out), "abababab") {
				t.Errorf("%s of %T prints a secret: %s", verb, v, out)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(r), "REDACTED") || !strings.Contains(fmt.Sprint(k), "mldsa65") {
		t.Errorf("%v / %v", r, k)
	}
}

// TestApplicationDataAfterHandshake: bytes the client sends right after
// its finished message, in the same segment, stay in the connection for
// the server's application: the handshake reads its frames in as few
// calls as it can, but never past the last one.
func TestApplicationDataAfterHandshake(t *testing.T) {
	ks := serverKeys(t)
	for _, suite := range []Suite{plain, {MLKEM768, MLDSA65}} {
		t.Run(suite.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fp := keyFor(ks, MLDSA65).Fingerprint()
			go func() {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return
				}
				defer c.Close()
				hc := &holdSecondWrite{Conn: c}
				if _, err := Client(context.Background(), hc, &ClientConfig{Suite: suite, PinnedFingerprint: fp[:]}); err != nil {
					return
				}
				// The finished message and the application's first bytes
				// leave in one write.
				c.Write(append(hc.held, "application data"...))
				time.Sleep(time.Second)
			}()
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			if _, err := Server(context.Background(), sc, &ServerConfig{Keys: ks}); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len("application data"))
			sc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(sc, got); err != nil || string(got) != "application data" {
				t.Fatalf("after the handshake the server read %q, %v", got, err)
			}
		})
	}
}

// holdSecondWrite keeps the client's second write (its finished message)
// instead of sending it, so that the test sends it with what follows.
type holdSecondWrite struct {
	net.Conn
	writes int
	held   []byte
}

func (h *holdSecondWrite) Write(b []byte) (int, error) {
	h.writes++
	if h.writes == 2 {
		h.held = append([]byte(nil), b...)
		return len(b), nil
	}
	return h.Conn.Write(b)
}

// TestCryptoTime checks what the lab's floor is built from: each side's
// CryptoTime is positive, and the client's, counted until the key is
// confirmed, is within its time to confirmation.
func TestCryptoTime(t *testing.T) {
	for _, suite := range []Suite{{X25519, SigNone}, {MLKEM768, SigNone}, {MLKEM512, SigNone}} {
		for _, be := range []Backend{Stdlib, Circl} {
			if refused(t, suite, be) {
				continue
			}
			cr, sr, cerr, serr := pair(t, &ClientConfig{Suite: suite, Backend: be}, &ServerConfig{Backend: be})
			if cerr != nil || serr != nil {
				t.Fatal(cerr, serr)
			}
			if cr.Stats.CryptoTime <= 0 || sr.Stats.CryptoTime <= 0 || cr.Stats.CryptoTime > cr.Stats.Confirmed {
				t.Errorf("%v/%v: client crypto %v of %v to confirmation, server crypto %v", suite, be, cr.Stats.CryptoTime, cr.Stats.Confirmed, sr.Stats.CryptoTime)
			}
		}
	}
}

// TestHelloReadAhead: the server reads ahead for a ClientHello no more
// than the largest hello of any suite (X25519+ML-KEM-1024: flags, a
// 1568-byte encapsulation key, an X25519 share), not the largest frame,
// so a connection that has sent nothing holds that much buffer at most.
func TestHelloReadAhead(t *testing.T) {
	if want := 1 + 1568 + 32; maxClientHello != want {
		t.Fatalf("maxClientHello = %d, want %d", maxClientHello, want)
	}
	for _, s := range AllSuites() {
		if clientHelloSize(s) > maxClientHello {
			t.Fatalf("%v: hello of %d bytes", s, clientHelloSize(s))
		}
	}
	f := &flightReader{}
	f.expect(HeaderSize + maxClientHello)
	if cap(f.buf) != HeaderSize+maxClientHello {
		t.Fatalf("read-ahead buffer of %d bytes", cap(f.buf))
	}
}
