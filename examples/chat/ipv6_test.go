package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardlab/ward/kms/local"
)

// ulaPrefix is the IPv6 ULA range .ci/run puts on the loopback interface of
// its network namespace: fd77:ae00:0:N::1 and ::2 for N = 0…255, each N its
// own /64.
var ulaPrefix = netip.MustParsePrefix("fd77:ae00::/48")

// ula64s returns the first address of n distinct /64s of ulaPrefix found on
// this machine, skipping the test when there are fewer (failing it inside
// .ci/run's network namespace, WARD_NETNS=1, which has them).
func ula64s(t testing.TB, n int) []netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || !ulaPrefix.Contains(ip) || ip.As16()[15] != 1 {
			continue
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	if len(out) < n {
		msg := fmt.Sprintf("%d of %d IPv6 /64s of %v on this machine (.ci/run adds them inside its network namespace)", len(out), n, ulaPrefix)
		if os.Getenv("WARD_NETNS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return out[:n]
}

// second returns ::2 of addr's /64.
func second(a netip.Addr) netip.Addr {
	b := a.As16()
	b[15] = 2
	return netip.AddrFrom16(b)
}

// TestGuessersOverIPv6Prefixes is TestGuessersCannotLockOutTheOwner over
// IPv6: guessers on 64 /64s each spend only their own (account, /64)
// budget, two addresses of one /64 share it, and alice gets in at once with
// her device token and from a new /64.
func TestGuessersOverIPv6Prefixes(t *testing.T) {
	nets := ula64s(t, 66)
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1000, SignupPerHour: 1000, SignupsPerMinute: 1000}}
	ta := newTestApp(t, cfg)
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ts := httptest.NewUnstartedServer(ta.app.Handler())
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	defer ts.Close()
	ta.ts = ts
	browser := func(from netip.Addr) *client {
		jar, _ := cookiejar.New(nil)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
		return &client{t: t, ts: ts, app: ta.app, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}}
	}
	alice := browser(nets[0])
	alice.register("alice@example.com", "correct horse")
	if code := alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("alice's first log-in: %d", code)
	}
	// One wrong guess from each of 64 /64s, alice's among them.
	for _, n := range nets[:64] {
		if code := browser(second(n)).do("POST", "/api/login", credentials{"alice@example.com", "guess"}, nil); code != 401 {
			t.Fatalf("a guess from %v: %d", n, code)
		}
	}
	// Two addresses of one /64 share its budget.
	shared := nets[1]
	refused := false
	for i := range 8 {
		from := shared
		if i%2 == 1 {
			from = second(shared)
		}
		if code := browser(from).do("POST", "/api/login", credentials{"alice@example.com", "guess"}, nil); code == 429 {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("guesses from two addresses of one /64 were never refused")
	}
	if code := browser(second(shared)).do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 429 {
		t.Fatalf("the right password from the spent /64, without a device token: %d", code)
	}
	if code := alice.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("alice's browser with its device token: %d", code)
	}
	if code := browser(nets[65]).do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("alice from a new /64: %d", code)
	}
}

// BenchmarkLoginUnderGuessing is the seams issue's guessing campaign:
// wrong guesses at alice's password, 10 a second, spread over 256 IPv6
// /64s and 16 IPv4 /24s, while alice logs in from her browser (holding the
// device token of an earlier log-in) and from a new browser on one of the
// guessers' prefixes, retrying each second until it gets in. It reports
// both log-ins' latency (p50, p95). It needs the /64s of .ci/run's
// namespace:
//
//	go test -c -o chat.test ./examples/chat
//	unshare -n sh -c '.ci/netns-lo && examples/chat/chat.test -test.run "^$" -test.bench LoginUnderGuessing -test.benchtime 40x'
func BenchmarkLoginUnderGuessing(b *testing.B) {
	v6 := ula64s(b, 256)
	dir := b.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1000, SignupPerHour: 1000, SignupsPerMinute: 1000}}
	ctx := context.Background()
	if _, err := Init(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	app, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	serve := func(addr string) string {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewUnstartedServer(app.Handler())
		ts.Listener.Close()
		ts.Listener = ln
		ts.Start()
		b.Cleanup(ts.Close)
		return ts.URL
	}
	url4, url6 := serve("127.0.0.1:0"), serve("[::1]:0")
	type browser struct {
		hc  *http.Client
		url string
	}
	newBrowser := func(from netip.Addr) browser {
		jar, _ := cookiejar.New(nil)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
		u := url6
		if from.Is4() {
			u = url4
		}
		return browser{&http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}, u}
	}
	post := func(br browser, path string, body any) int {
		j, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", br.url+path, bytes.NewReader(j))
		req.Header.Set("Content-Type", "application/json")
		resp, err := br.hc.Do(req)
		if err != nil {
			return 0 // reported by the caller as a status of 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var prefixes []netip.Addr
	for _, a := range v6 {
		prefixes = append(prefixes, second(a))
	}
	for i := range 16 {
		prefixes = append(prefixes, netip.MustParseAddr(fmt.Sprintf("127.15.%d.1", i)))
	}
	alice := newBrowser(v6[0])
	post(alice, "/api/signup", credentials{"alice@example.com", "correct horse"})
	post(alice, "/api/verify", map[string]string{"token": verificationLink(b, app, "alice@example.com")})
	if code := post(alice, "/api/login", credentials{"alice@example.com", "correct horse"}); code != 200 {
		b.Fatalf("alice's first log-in: %d", code)
	}
	// The campaign: 10 guesses a second, round-robin over the prefixes.
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		guesses := 0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- guesses
				return
			case <-tick.C:
			}
			go post(newBrowser(prefixes[i%len(prefixes)]), "/api/login", credentials{"alice@example.com", fmt.Sprintf("guess %d", i)})
			guesses++
		}
	}()
	time.Sleep(5 * time.Second) // the campaign under way
	var withToken, newOne []float64
	refused := 0
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if code := post(alice, "/api/login", credentials{"alice@example.com", "correct horse"}); code != 200 {
			b.Fatalf("alice's browser under the campaign: %d", code)
		}
		withToken = append(withToken, float64(time.Since(start).Microseconds())/1000)
		nb := newBrowser(prefixes[(i*37)%len(prefixes)])
		start = time.Now()
		for {
			code := post(nb, "/api/login", credentials{"alice@example.com", "correct horse"})
			if code == 200 {
				break
			}
			if code != 429 || time.Since(start) > time.Minute {
				b.Fatalf("a new browser under the campaign: %d after %v", code, time.Since(start))
			}
			refused++
			time.Sleep(time.Second)
		}
		newOne = append(newOne, float64(time.Since(start).Microseconds())/1000)
	}
	b.StopTimer()
	close(stop)
	guesses := <-done
	slices.Sort(withToken)
	slices.Sort(newOne)
	b.ReportMetric(withToken[len(withToken)/2], "token-p50-ms")
	b.ReportMetric(withToken[len(withToken)*95/100], "token-p95-ms")
	b.ReportMetric(newOne[len(newOne)/2], "new-p50-ms")
	b.ReportMetric(newOne[len(newOne)*95/100], "new-p95-ms")
	b.ReportMetric(float64(refused), "new-refusals")
	b.ReportMetric(float64(guesses), "guesses")
}
