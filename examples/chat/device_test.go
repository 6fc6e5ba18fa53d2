package chat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestGuessersCannotLockOutTheOwner: guessers fail at alice's password
// from many prefixes; each exhausts only its own (account, prefix). Alice
// logs in at once from her browser, which holds the device token of an
// earlier log-in, and from a new browser on a prefix the guessers did not
// use; a guesser's prefix stays refused, and a device token issued to
// alice does not help anyone at bob's account. (main counted failures
// per account only: five wrong guesses from anywhere locked her out.)
func TestGuessersCannotLockOutTheOwner(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1000, SignupPerHour: 1000, SignupsPerMinute: 1000}}
	ta := newTestApp(t, cfg)
	ta.client(t).signup("bob@example.com")
	// A browser from its own address, with a cookie jar.
	browser := func(from string) *http.Client {
		jar, _ := cookiejar.New(nil)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	login := func(c *http.Client, email, pw string) int {
		body, _ := json.Marshal(credentials{email, pw})
		req, _ := http.NewRequest("POST", ta.ts.URL+"/api/login", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	alice := browser("127.5.0.1")
	signup, _ := json.Marshal(credentials{"alice@example.com", "correct horse"})
	req, _ := http.NewRequest("POST", ta.ts.URL+"/api/signup", strings.NewReader(string(signup)))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := alice.Do(req); err != nil || resp.StatusCode != 202 {
		t.Fatalf("signup: %v", err)
	}
	verify, _ := json.Marshal(map[string]string{"token": verificationLink(t, ta.app, "alice@example.com")})
	req, _ = http.NewRequest("POST", ta.ts.URL+"/api/verify", strings.NewReader(string(verify)))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := alice.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("verify: %v", err)
	}
	if code := login(alice, "alice@example.com", "correct horse"); code != 200 {
		t.Fatalf("first log-in: %d", code)
	}
	// Guessers on 16 prefixes, alice's own among them, each until refused.
	for p := range 16 {
		g := browser(fmt.Sprintf("127.6.%d.1", p))
		if p == 0 {
			g = browser("127.5.0.2") // alice's /24
		}
		refused := false
		for range 8 {
			if code := login(g, "alice@example.com", "guess"); code == 429 {
				refused = true
				break
			}
		}
		if !refused {
			t.Fatalf("prefix %d: guesses were never refused", p)
		}
	}
	if code := login(alice, "alice@example.com", "correct horse"); code != 200 {
		t.Fatalf("alice's browser, with its device token, on a prefix the guessers used: %d", code)
	}
	if code := login(browser("127.7.0.1"), "alice@example.com", "correct horse"); code != 200 {
		t.Fatalf("alice from a new browser on an untouched prefix: %d", code)
	}
	if code := login(browser("127.6.3.9"), "alice@example.com", "correct horse"); code != 429 {
		t.Fatalf("a guessers' prefix, without a device token: %d", code)
	}
	// Alice's token is for alice: at bob's account it counts as nothing.
	for range 5 {
		login(alice, "bob@example.com", "guess")
	}
	if code := login(alice, "bob@example.com", "correct horse"); code != 429 {
		t.Fatalf("alice's device token at bob's account: %d", code)
	}
}

// postFrom posts body as JSON to path from the loopback address from (a
// client network of its own), and returns the status and the error text.
func postFrom(t *testing.T, ta *testApp, from, path string, body any) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", ta.ts.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out["error"]
}

// TestSignupBudgets: a network (an IPv4 /24) that spends its sign-up
// budget is refused with a message about its network, another network
// still signs up, and the service-wide budget, when spent, says it is the
// service's (main spent it from seven addresses and blamed "this
// address").
func TestSignupBudgets(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1000, SignupPerHour: 3, SignupsPerMinute: 5}}
	ta := newTestApp(t, cfg)
	signup := func(from string, i int) (int, string) {
		return postFrom(t, ta, from, "/api/signup", credentials{fmt.Sprintf("u%d@example.com", i), "correct horse"})
	}
	for i := range 3 { // three addresses of one /24
		if code, _ := signup(fmt.Sprintf("127.8.0.%d", i+1), i); code != 202 {
			t.Fatalf("sign-up %d: %d", i, code)
		}
	}
	if code, msg := signup("127.8.0.9", 3); code != 429 || !strings.Contains(msg, "network") {
		t.Fatalf("fourth from the /24: %d %q", code, msg)
	}
	for i := range 2 { // other networks, within the global budget
		if code, _ := signup(fmt.Sprintf("127.9.%d.1", i), 10+i); code != 202 {
			t.Fatalf("another network: %d", code)
		}
	}
	if code, msg := signup("127.10.0.1", 20); code != 429 || !strings.Contains(msg, "service") || strings.Contains(msg, "address") {
		t.Fatalf("global budget: %d %q", code, msg)
	}
}

// TestResetBudgets: password-reset requests for one address from many
// networks mail it ResetsPerHour times, then are refused with the same
// answer whether or not the address has an account; all requests together
// stop at ResetsPerMinute, with a message that says it is the service's
// (400 reset mails reached one address from 40 networks in 0.9 s before).
func TestResetBudgets(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1000, SignupPerHour: 1000, SignupsPerMinute: 1000, ResetsPerHour: 3, ResetsPerMinute: 8}}
	ta := newTestApp(t, cfg)
	ta.client(t).signup("alice@example.com")
	reset := func(from, email string) (int, string) {
		return postFrom(t, ta, from, "/api/reset", map[string]string{"email": email})
	}
	mails := func() int {
		ms, _ := ta.app.Outbox(context.Background(), 1000)
		n := 0
		for _, m := range ms {
			if strings.Contains(m.Body, "reset") {
				n++
			}
		}
		return n
	}
	before := mails()
	for _, email := range []string{"alice@example.com", "nobody@example.com"} {
		for i := range 5 { // five networks
			code, msg := reset(fmt.Sprintf("127.20.%d.1", i), email)
			if want := 202; i >= 3 {
				if code != 429 || !strings.Contains(msg, "this address") {
					t.Fatalf("%s, request %d: %d %q", email, i, code, msg)
				}
			} else if code != want {
				t.Fatalf("%s, request %d: %d %q", email, i, code, msg)
			}
		}
	}
	if got := mails() - before; got != 3 {
		t.Fatalf("%d reset mails to alice, want 3", got)
	}
	// 6 of the service's 8 a minute are spent: two more addresses pass,
	// the next is refused as the service's.
	for i := range 2 {
		if code, msg := reset("127.21.0.1", fmt.Sprintf("u%d@example.com", i)); code != 202 {
			t.Fatalf("another address: %d %q", code, msg)
		}
	}
	if code, msg := reset("127.22.0.1", "u9@example.com"); code != 429 || !strings.Contains(msg, "service") {
		t.Fatalf("the service's budget: %d %q", code, msg)
	}
}

// TestDeviceTokensPerEpoch: a device token is valid for its account while
// the key of the epoch it was signed in is in the keyring, across a
// rotation; once that key is retired it is refused, and so is every token
// the holder of a keyring file from before could make — one signed in the
// old file's epoch, one of the release before (keyed by the keyring's
// root, which every copy of the file derives) — and a made-up epoch, a
// changed byte, another account's token.
func TestDeviceTokensPerEpoch(t *testing.T) {
	ctx := context.Background()
	kr, err := keyring.New(keyring.DefaultAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	ks := local.Generate()
	oldFile, err := kr.Marshal(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	first := kr.Primary().ID
	d, err := newDevices(kr, &origins{})
	if err != nil {
		t.Fatal(err)
	}
	cookie := func(d *devices, account string) *http.Cookie {
		w := httptest.NewRecorder()
		d.issue(w, account)
		cs := w.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("issue set %d cookies", len(cs))
		}
		return cs[0]
	}
	valid := func(c *http.Cookie, account string) bool {
		r := httptest.NewRequest("POST", "/api/login", nil)
		r.AddCookie(c)
		_, ok := d.valid(r, account)
		return ok
	}
	before := cookie(d, "alice@example.com")
	if !valid(before, "alice@example.com") {
		t.Fatal("a fresh token is refused")
	}
	if valid(before, "bob@example.com") {
		t.Fatal("alice's token is valid for bob")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(before.Value)
	for i := range raw {
		changed := slices.Clone(raw)
		changed[i] ^= 1
		if valid(&http.Cookie{Name: before.Name, Value: base64.RawURLEncoding.EncodeToString(changed)}, "alice@example.com") {
			t.Fatalf("a token with byte %d changed is valid", i)
		}
	}
	// The release before's token: random ‖ HMAC(Derive("chat device token")).
	rootKey, _ := kr.Derive(devicePurpose, 32)
	random := make([]byte, 16)
	v1 := base64.RawURLEncoding.EncodeToString(append(random, tag(rootKey, "alice@example.com", random)...))
	if valid(&http.Cookie{Name: before.Name, Value: v1}, "alice@example.com") {
		t.Fatal("a token of the release before (keyed by the root) is valid")
	}
	m := keyring.NewManager(kr)
	if _, err := m.AddPrimary(ctx, keyring.DefaultAlgorithm); err != nil {
		t.Fatal(err)
	}
	after := cookie(d, "alice@example.com")
	if !valid(before, "alice@example.com") || !valid(after, "alice@example.com") {
		t.Fatal("a rotation refuses the tokens of the epoch before while its key is in the keyring")
	}
	if err := m.Remove(ctx, first); err != nil {
		t.Fatal(err)
	}
	if valid(before, "alice@example.com") {
		t.Fatal("a token of a retired epoch is valid")
	}
	if !valid(after, "alice@example.com") {
		t.Fatal("a token of the current epoch is refused")
	}
	old, err := keyring.Unmarshal(ctx, oldFile, ks)
	if err != nil {
		t.Fatal(err)
	}
	od, err := newDevices(old, &origins{})
	if err != nil {
		t.Fatal(err)
	}
	if valid(cookie(od, "alice@example.com"), "alice@example.com") {
		t.Fatal("a token made with the keyring file from before is valid")
	}
}

// FuzzDeviceToken: any cookie value is refused or valid, never a panic,
// and a valid one is a token issued for the account.
func FuzzDeviceToken(f *testing.F) {
	kr, err := keyring.New(keyring.DefaultAlgorithm)
	if err != nil {
		f.Fatal(err)
	}
	d, err := newDevices(kr, &origins{})
	if err != nil {
		f.Fatal(err)
	}
	w := httptest.NewRecorder()
	d.issue(w, "alice@example.com")
	issued := w.Result().Cookies()[0].Value
	f.Add(issued)
	f.Add("")
	f.Add("AgAAAAA")
	f.Fuzz(func(t *testing.T, value string) {
		r := httptest.NewRequest("POST", "/api/login", nil)
		r.Header.Set("Cookie", d.cookie+"="+value)
		if _, ok := d.valid(r, "alice@example.com"); ok && value != issued {
			t.Fatalf("a token never issued is valid: %q", value)
		}
	})
}
