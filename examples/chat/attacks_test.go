package chat

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// The tests in this file re-run the attacks of issue 11 against the chat
// service; SECURITY.md names each one.

// TestRotateWhileServing: 'ward-chat rotate' while the service runs, then
// a SIGHUP (Reload): nothing is overwritten, every value stays readable,
// before and after a restart.
func TestRotateWhileServing(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		send := func(body string) {
			if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": body}, nil); code != 201 {
				t.Fatalf("send: %d", code)
			}
		}
		send("before the rotation")
		offline, err := Open(ctx, ta.cfg) // ward-chat rotate, in another process
		if err != nil {
			t.Fatal(err)
		}
		if err := offline.Rotate(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		offline.Close()
		send("while the service still has the old keyring")
		if err := ta.app.Reload(ctx, io.Discard); err != nil { // SIGHUP
			t.Fatal(err)
		}
		if err := ta.app.Rotate(ctx, io.Discard); err != nil { // a second rotation, live
			t.Fatal(err)
		}
		send("after")
		restarted, err := Open(ctx, ta.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer restarted.Close()
		ms, err := restarted.store.messages(ctx, mustUser(t, restarted, "alice@example.com"), conv.ID, 50)
		if err != nil || len(ms) != 6 {
			t.Fatalf("%d messages, %v", len(ms), err)
		}
		for _, m := range ms {
			if m.Error != "" {
				t.Fatalf("unreadable after restart: %+v", m)
			}
		}
		if n := len(restarted.kr.Keys()); n != 3 {
			t.Fatalf("%d keys: a rotation was lost", n)
		}
	})
}

func mustUser(t *testing.T, s *Service, email string) int64 {
	t.Helper()
	id, _, err := s.store.userByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestKeyringFailsClosed: a missing keyring file (a typo in --keyring)
// starts nothing and creates nothing; a new keyring for an existing
// database, or an older copy of the file, is refused by the ledger.
func TestKeyringFailsClosed(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ctx := context.Background()
		ta.client(t).signup("alice@example.com")
		typo := ta.cfg
		typo.KeyringPath += ".typo"
		if _, err := Open(ctx, typo); !errors.Is(err, ErrNoKeyring) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing keyring: %v", err)
		}
		if _, err := os.Stat(typo.KeyringPath); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal("a keyring was created")
		}
		if _, err := Init(ctx, typo); !errors.Is(err, keyring.ErrWrongKeyring) {
			t.Fatalf("init over a database of another keyring: %v", err)
		}
		if again, err := Open(ctx, ta.cfg); err != nil { // the right one still opens
			t.Fatal(err)
		} else {
			again.Close()
		}
		old, _ := os.ReadFile(ta.cfg.KeyringPath)
		if err := ta.app.Rotate(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		rolledBack := ta.cfg
		rolledBack.KeyringPath = filepath.Join(t.TempDir(), "old.json")
		os.WriteFile(rolledBack.KeyringPath, old, 0o600)
		if _, err := Open(ctx, rolledBack); !errors.Is(err, keyring.ErrRollback) {
			t.Fatalf("rolled-back keyring: %v", err)
		}
		var out bytes.Buffer
		if err := Inspect(ctx, typo.DB, &out); err != nil || !strings.Contains(out.String(), ta.app.kr.ID()) {
			t.Fatalf("inspect-db: %v %s", err, out.String())
		}
		// The chat's keyring opens with the same master key anywhere (ward keyring list).
		if _, err := keyring.Load(ctx, ta.cfg.KeyringPath, ta.cfg.KeyService); err != nil {
			t.Fatal(err)
		}
		if _, err := keyring.Load(ctx, ta.cfg.KeyringPath, local.Generate()); !errors.Is(err, keyring.ErrWrongWrapper) {
			t.Fatal(err)
		}
	})
}

// TestDatabaseWriter: an attacker who can write the database but holds no
// key re-points rows to read another user's data; every attempt shows an
// integrity error or refuses access, and no plaintext crosses users.
func TestDatabaseWriter(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		q := ta.app.store.q
		alice, mallory := ta.client(t), ta.client(t)
		aConv := alice.signup("alice@example.com")
		mConv := mallory.signup("mallory@example.com")
		secret := "alice's diagnosis"
		alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", aConv.ID), map[string]string{"body": secret}, nil)
		mallory.do("POST", fmt.Sprintf("/api/conversations/%d/messages", mConv.ID), map[string]string{"body": "hi"}, nil)
		aliceID, malloryID := mustUser(t, ta.app, "alice@example.com"), mustUser(t, ta.app, "mallory@example.com")
		leaked := func(c *client) bool {
			var cs []Conversation
			c.do("GET", "/api/conversations", nil, &cs)
			for _, conv := range cs {
				if strings.Contains(conv.Title, "alice") {
					return true
				}
				var ms []Message
				c.do("GET", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), nil, &ms)
				for _, m := range ms {
					if strings.Contains(m.Body, "diagnosis") {
						return true
					}
				}
			}
			return false
		}
		exec := func(query string, args ...any) {
			t.Helper()
			if _, err := ta.db.Exec(q(query), args...); err != nil {
				t.Fatal(err)
			}
		}
		// 1. Re-point alice's conversation (and its messages' user_id) to mallory.
		exec(`UPDATE conversations SET user_id = ? WHERE id = ?`, malloryID, aConv.ID)
		exec(`UPDATE messages SET user_id = ? WHERE conversation_id = ?`, malloryID, aConv.ID)
		if leaked(mallory) {
			t.Fatal("re-pointed conversation leaked")
		}
		exec(`UPDATE conversations SET user_id = ? WHERE id = ?`, aliceID, aConv.ID)
		exec(`UPDATE messages SET user_id = ? WHERE conversation_id = ?`, aliceID, aConv.ID)
		// 2. Move alice's message into mallory's conversation, and flip roles.
		var msgID int64
		ta.db.QueryRow(q(`SELECT id FROM messages WHERE conversation_id = ? AND role = 'user'`), aConv.ID).Scan(&msgID)
		exec(`UPDATE messages SET conversation_id = ?, user_id = ? WHERE id = ?`, mConv.ID, malloryID, msgID)
		if leaked(mallory) {
			t.Fatal("moved message leaked")
		}
		exec(`UPDATE messages SET conversation_id = ?, user_id = ? WHERE id = ?`, aConv.ID, aliceID, msgID)
		var ms []Message
		alice.do("GET", fmt.Sprintf("/api/conversations/%d/messages", aConv.ID), nil, &ms)
		if len(ms) != 2 || ms[0].Error != "" || ms[1].Error != "" {
			t.Fatalf("moved back: %+v", ms)
		}
		exec(`UPDATE messages SET role = CASE role WHEN 'user' THEN 'assistant' ELSE 'user' END WHERE conversation_id = ?`, aConv.ID)
		alice.do("GET", fmt.Sprintf("/api/conversations/%d/messages", aConv.ID), nil, &ms)
		if len(ms) != 2 || ms[0].Error == "" || ms[1].Error == "" {
			t.Fatalf("flipped roles opened: %+v", ms)
		}
		// 3. Re-point mallory's session to alice.
		exec(`UPDATE sessions SET user_id = ? WHERE user_id = ?`, aliceID, malloryID)
		if code := mallory.do("GET", "/api/conversations", nil, nil); code != 401 {
			t.Fatalf("re-pointed session: %d", code)
		}
		// 4. Copy mallory's password hash (whose password she knows) onto alice.
		exec(`UPDATE users SET password = (SELECT password FROM users WHERE id = ?), password_mac = (SELECT password_mac FROM users WHERE id = ?) WHERE id = ?`, malloryID, malloryID, aliceID)
		m2 := ta.client(t)
		if code := m2.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 401 {
			t.Fatalf("copied password hash: %d", code)
		}
		if leaked(m2) {
			t.Fatal("leak after copying the hash")
		}
	})
}

// TestLoginAbuse: look-alike addresses count as one account, a burst of
// concurrent guesses cannot exceed the limit, a flood of addresses from
// one client is cut by the per-address limit without resetting anyone's
// counter, and busy answers do not tell known from unknown accounts.
func TestLoginAbuse(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 60, SignupPerHour: 100, SignupsPerMinute: 100}}
	ta := newTestApp(t, cfg)
	ta.client(t).signup("alice@example.com")
	eve := ta.client(t)
	// Look-alikes: fullwidth letters and case fold to the same account.
	for _, addr := range []string{"alice@example.com", "ＡＬＩＣＥ@example.com", " Alice@Example.com", "ａlice@example.com", "alice@EXAMPLE.com"} {
		if code := eve.do("POST", "/api/login", credentials{addr, "wrong"}, nil); code != 401 {
			t.Fatalf("%q: %d", addr, code)
		}
	}
	if code := eve.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 429 {
		t.Fatalf("after five look-alike failures: %d", code)
	}
	// A burst of 40 concurrent guesses at bob: at most 5 are hashed.
	ta.client(t).signup("bob@example.com")
	before := ta.app.server.hasher.Limiter().Stats().Admitted
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ta.client(t).do("POST", "/api/login", credentials{"bob@example.com", "guess"}, nil)
		}()
	}
	wg.Wait()
	if n := ta.app.server.hasher.Limiter().Stats().Admitted - before; n > 5 {
		t.Fatalf("%d guesses hashed for one account, limit 5", n)
	}
	// A flood of unknown addresses from one client is refused per address.
	codes := map[int]int{}
	for i := range 100 {
		codes[eve.do("POST", "/api/login", credentials{fmt.Sprintf("x%d@example.com", i), "wrong"}, nil)]++
	}
	if codes[429] == 0 {
		t.Fatalf("flood not limited: %v", codes)
	}
	if code := eve.do("POST", "/api/login", credentials{"bob@example.com", "correct horse"}, nil); code != 429 {
		t.Fatalf("the flood reset bob's counter or the address limit: %d", code)
	}
}

// TestBusyAnswersAlike: with the hasher saturated, known and unknown
// accounts both get 503 with the same body.
func TestBusyAnswersAlike(t *testing.T) {
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "c.db"), KeyringPath: filepath.Join(t.TempDir(), "k.json"), KeyService: local.Generate()})
	ta.client(t).signup("alice@example.com")
	l := ta.app.server.hasher.Limiter()
	var holds []func()
	for range l.Config().MaxInFlight {
		r, _ := l.Acquire(context.Background(), 1)
		holds = append(holds, r)
	}
	defer func() {
		for _, r := range holds {
			r()
		}
	}()
	// The queue's waiters leave when the test ends; the answers themselves
	// have the client's own generous timeout, not a clock shared with them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second}
	answer := func(email string) (int, string) {
		req, _ := http.NewRequest("POST", ta.ts.URL+"/api/login", strings.NewReader(fmt.Sprintf(`{"email":%q,"password":"x"}`, email)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Fill the queue so that further requests are refused at once, and
	// wait until the limiter says it is full rather than for a fixed time.
	for range l.Config().MaxQueue {
		go l.Acquire(ctx, 1)
	}
	for deadline := time.Now().Add(30 * time.Second); l.Stats().Queued < l.Config().MaxQueue; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d of %d waiters after 30 s", l.Stats().Queued, l.Config().MaxQueue)
		}
	}
	kc, kb := answer("alice@example.com")
	uc, ub := answer("nobody@example.com")
	if kc != 503 || uc != 503 || kb != ub {
		t.Fatalf("known %d %q, unknown %d %q", kc, kb, uc, ub)
	}
}

// TestRequestChecks: text/plain bodies and cross-site requests are
// refused (log-in CSRF), responses carry the security headers, and the
// database files are private.
func TestRequestChecks(t *testing.T) {
	dir := t.TempDir()
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate()})
	post := func(ct string, hdr map[string]string) (int, http.Header) {
		req, _ := http.NewRequest("POST", ta.ts.URL+"/api/login", strings.NewReader(`{"email":"a@b.c","password":"x"}`))
		req.Header.Set("Content-Type", ct)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	if code, _ := post("text/plain", nil); code != 415 {
		t.Fatalf("text/plain: %d", code)
	}
	if code, _ := post("application/json", map[string]string{"Origin": "https://evil.example"}); code != 403 {
		t.Fatalf("foreign origin: %d", code)
	}
	if code, _ := post("application/json", map[string]string{"Sec-Fetch-Site": "cross-site"}); code != 403 {
		t.Fatalf("cross-site fetch: %d", code)
	}
	code, h := post("application/json", map[string]string{"Origin": ta.ts.URL, "Sec-Fetch-Site": "same-origin"})
	if code != 401 || h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("same origin: %d %v", code, h)
	}
	for _, f := range []string{"chat.db", "chat.db-wal", "kr.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st.Mode(), err)
		}
	}
	// Log-in starts a new session and ends the one the client had.
	c := ta.client(t)
	c.signup("carol@example.com")
	var before int
	ta.db.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&before)
	c.do("POST", "/api/login", credentials{"carol@example.com", "correct horse"}, nil)
	var after int
	ta.db.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&after)
	if after != before {
		t.Fatalf("sessions %d -> %d: the old session was not ended", before, after)
	}
	ta.db.Exec(`UPDATE sessions SET expires = 1`)
	if n, err := ta.app.SweepSessions(context.Background()); err != nil || n == 0 {
		t.Fatalf("sweep: %d %v", n, err)
	}
}

// TestSlowClients: trickling clients cannot hold the server: connections
// over the per-address cap are closed at once, and a real client is still
// served.
func TestSlowClients(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{MaxConnsPerAddress: 20, MaxConns: 1000}}
	if _, err := Init(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer serveBackground(t, s, ln)()
	var conns []net.Conn
	for range 200 { // trickle: a request line and nothing more
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			continue
		}
		c.Write([]byte("POST /api/login HTTP/1.1\r\nHost: x\r\n"))
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// All read at once, to one deadline: the connections the server keeps
	// wait until it, and a slow (loaded) server has that long to close the
	// rest. It is below the server's 5 s header timeout.
	var closed atomic.Int32
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(deadline)
			var ne net.Error
			if _, err := c.Read(make([]byte, 1)); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				closed.Add(1) // EOF, or a reset: the server closed it
			}
		})
	}
	wg.Wait()
	if closed := closed.Load(); closed < 150 {
		t.Fatalf("only %d of %d connections over the cap were closed", closed, len(conns))
	}
	for _, c := range conns {
		c.Close()
	}
	time.Sleep(50 * time.Millisecond)
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a real client: %v", err)
	}
	resp.Body.Close()
}

// TestExistingDatabase opens a database written before values were bound
// to their owners (testdata/v1-db): the service refuses to start on it
// until Migrate (ward-chat migrate) has re-bound every value, once, and
// then refuses the old binding; unpeppered password hashes are refused
// unless AllowUnpepperedHashes is set, and then upgraded at log-in.
func TestExistingDatabase(t *testing.T) {
	ctx := context.Background()
	cfg := v1Database(t)
	mk := cfg.KeyService
	if _, err := Open(ctx, cfg); !errors.Is(err, ErrNeedsMigration) {
		t.Fatalf("open before the migration: %v", err)
	}
	var out strings.Builder
	if err := Migrate(ctx, cfg, &out); err != nil || !strings.Contains(out.String(), "messages.body: 2 values re-bound") {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if err := Migrate(ctx, cfg, io.Discard); err == nil {
		t.Fatal("a second migration ran")
	}
	strict, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(strict.Handler())
	c := (&testApp{ts: ts}).client(t)
	if code := c.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 401 {
		t.Fatalf("unpeppered hash under RequirePepper: %d", code)
	}
	ts.Close()
	strict.Close()
	cfg.AllowUnpepperedHashes = true
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts = httptest.NewServer(s.Handler())
	defer ts.Close()
	c = (&testApp{ts: ts}).client(t)
	if code := c.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("login: %d", code)
	}
	var cs []Conversation
	c.do("GET", "/api/conversations", nil, &cs)
	var ms []Message
	c.do("GET", fmt.Sprintf("/api/conversations/%d/messages", cs[0].ID), nil, &ms)
	if len(cs) != 1 || cs[0].Title != "Alice's plans" || len(ms) != 2 || ms[0].Body != "the dentist on Tuesday" {
		t.Fatalf("%+v %+v", cs, ms)
	}
	var hash string
	s.db.QueryRow(`SELECT password FROM users`).Scan(&hash)
	if !strings.Contains(hash, "keyid=") {
		t.Fatalf("hash not upgraded to a peppered one: %s", hash)
	}
	// The values are bound now: the v1 binding no longer opens them.
	var raw []byte
	s.db.QueryRow(`SELECT body FROM messages WHERE role = 'user'`).Scan(&raw)
	ct, _ := field.ParseCiphertext(raw)
	old, _ := field.NewColumn(s.kr, "messages", "body")
	if _, err := old.Open(field.RowInt(ms[0].ID), ct); err == nil {
		t.Fatal("old binding still opens")
	}
	if _, ok := keycore.SubjectKeyVersion(raw); !ok {
		t.Fatal("the migrated message is not under its user's own key")
	}
	s.Close()
	strict, err = Open(ctx, Config{DB: cfg.DB, KeyringPath: cfg.KeyringPath, KeyService: mk, Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	ts2 := httptest.NewServer(strict.Handler())
	defer ts2.Close()
	c2 := (&testApp{ts: ts2}).client(t)
	if code := c2.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
		t.Fatalf("login with the upgraded hash under RequirePepper: %d", code)
	}
	// The pre-upgrade backup's v1 value, put back by a database writer
	// (the cross-user read of the seams issue used such a value): after
	// the migration, legacy forms are refused for good.
	backup, err := sql.Open("sqlite", "file:testdata/v1-db/chat.db?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer backup.Close()
	var v1 []byte
	if err := backup.QueryRow(`SELECT body FROM messages WHERE id = ?`, ms[0].ID).Scan(&v1); err != nil || len(v1) == 0 || v1[0] != 1 {
		t.Fatalf("the fixture's v1 value: %x %v", v1, err)
	}
	if _, err := strict.db.Exec(`UPDATE messages SET body = ? WHERE id = ?`, v1, ms[0].ID); err != nil {
		t.Fatal(err)
	}
	var after []Message
	c2.do("GET", fmt.Sprintf("/api/conversations/%d/messages", cs[0].ID), nil, &after)
	for _, m := range after {
		if m.Body == "the dentist on Tuesday" {
			t.Fatal("a v1 value put back after the migration opened")
		}
	}
	if _, err := strict.store.cols.body.Open(field.RowInt(ms[0].ID).With(cs[0].ID, int64(1), "user"), mustCT(t, v1)); !errors.Is(err, field.ErrLegacyForm) {
		t.Fatalf("the service's column opened a v1 value: %v", err)
	}
}

// v1Database is the configuration of a copy of testdata/v1-db: a
// database and keyring file of the release before values were bound.
func v1Database(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"chat.db", "chat-keyring.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/v1-db", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mk, err := local.Load("testdata/v1-db/mk", nil)
	if err != nil {
		t.Fatal(err)
	}
	return Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "chat-keyring.json"), KeyService: mk, Limits: testLimits}
}

func mustCT(t *testing.T, b []byte) field.Ciphertext {
	t.Helper()
	ct, err := field.ParseCiphertext(b)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// TestRestartDoesNotVouchForPlantedRows is the account takeover of the
// seams issue: a database writer copies their own password hash onto the
// victim's row, clears its row MAC and deletes the "migrated" flag, then
// waits for a restart. main re-bound and re-MAC'd at every start and
// vouched for the planted hash; now the service computes MACs only in the
// operator's one-off migration, whose completion is anchored outside the
// database, and refuses to start on such a database, while the running
// service refuses the row.
func TestRestartDoesNotVouchForPlantedRows(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ta.client(t).signup("alice@example.com")
		ta.client(t).signup("mallory@example.com")
		db, q := ta.db, ta.app.dialect.Rebind
		idOf := func(email string) (id int64, hash string) {
			if err := db.QueryRow(q(`SELECT id, password FROM users WHERE email_idx = ?`), ta.app.store.emailKey(email)).Scan(&id, &hash); err != nil {
				t.Fatal(err)
			}
			return id, hash
		}
		alice, _ := idOf("alice@example.com")
		_, malloryHash := idOf("mallory@example.com")
		if _, err := db.Exec(q(`UPDATE users SET password = ?, password_mac = NULL WHERE id = ?`), malloryHash, alice); err != nil {
			t.Fatal(err)
		}
		// While it runs, the service refuses the planted row.
		if code := ta.client(t).do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code == 200 {
			t.Fatal("mallory's password opened alice's account")
		}
		// Restart, with the flag kept and with it deleted: refused both ways.
		ta.app.Close()
		db, _, err := openDB(ta.cfg.DB)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := Open(context.Background(), ta.cfg); !errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), "planted") {
			t.Fatalf("restart with a MAC-less hash: %v", err)
		}
		// The mark that says the database was migrated lives in the
		// authenticated ledger, anchored in the keyring file: deleting the
		// ledger refuses the start, and the migration, instead of making
		// the service (or the operator) vouch for the planted row.
		if _, err := db.Exec(`DELETE FROM ` + ledger.DefaultTable); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(context.Background(), ta.cfg); !errors.Is(err, ledger.ErrMissing) {
			t.Fatalf("restart without the ledger: %v", err)
		}
		if err := Migrate(context.Background(), ta.cfg, io.Discard); !errors.Is(err, ledger.ErrMissing) {
			t.Fatalf("migrate without the ledger: %v", err)
		}
		var mac []byte
		db.QueryRow(q(`SELECT password_mac FROM users WHERE id = ?`), alice).Scan(&mac)
		if mac != nil {
			t.Fatal("a start computed a MAC for the planted hash")
		}
	})
}

// TestSignupRevealsNothing is the seams issue's sign-up oracle: signing up
// and then logging in with the password just given answered 200 for a free
// address and 401 for a taken one. Now an account exists only once the
// link sent to the address is followed, so both answer 401; the outbox
// tells the owner of a taken address, and holds a link only for a free
// one. A database reader sees neither addresses nor links in the outbox,
// and a database writer cannot plant a pending sign-up.
func TestSignupRevealsNothing(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		ta.client(t).signup("alice@example.com")
		probe := ta.client(t)
		for _, email := range []string{"alice@example.com", "bob@example.com"} {
			var got map[string]string
			if code := probe.do("POST", "/api/signup", credentials{email, "guessed password"}, &got); code != 202 || got["status"] != msgCheckMail {
				t.Fatalf("signup %s: %d %v", email, code, got)
			}
			if code := probe.do("POST", "/api/login", credentials{email, "guessed password"}, nil); code != 401 {
				t.Fatalf("log-in right after signing up %s: %d, want 401 for taken and free alike", email, code)
			}
		}
		if verificationLink(t, ta.app, "bob@example.com") == "" {
			t.Fatal("no link for the free address")
		}
		ms, _ := ta.app.Outbox(context.Background(), 1000)
		var toAlice []string
		for _, m := range ms {
			if m.To == "alice@example.com" {
				toAlice = append(toAlice, m.Body)
			}
		}
		if len(toAlice) != 2 || strings.Contains(toAlice[1], "#verify=") || !strings.Contains(toAlice[1], "already has one") {
			t.Fatalf("the taken address's mail: %q", toAlice)
		}
		rows, _ := ta.db.Query(`SELECT recipient, body FROM outbox`)
		for rows.Next() {
			var to, body []byte
			rows.Scan(&to, &body)
			if strings.Contains(string(to)+string(body), "example.com") || strings.Contains(string(body), "verify") {
				t.Fatal("plaintext in the outbox table")
			}
		}
		rows.Close()
		// A link works once.
		token := verificationLink(t, ta.app, "bob@example.com")
		if code := probe.do("POST", "/api/verify", map[string]string{"token": token}, nil); code != 200 {
			t.Fatalf("verify: %d", code)
		}
		if code := probe.do("POST", "/api/verify", map[string]string{"token": token}, nil); code != 400 {
			t.Fatalf("the same link twice: %d", code)
		}
		if code := probe.do("POST", "/api/login", credentials{"bob@example.com", "guessed password"}, nil); code != 200 {
			t.Fatalf("log-in after verification: %d", code)
		}
		// A database writer plants a pending sign-up for carol with their
		// own token and password hash: its row MAC is missing.
		probe.do("POST", "/api/signup", credentials{"mallory@example.com", "mallory's password"}, nil)
		mt := verificationLink(t, ta.app, "mallory@example.com")
		q := ta.app.dialect.Rebind
		if _, err := ta.db.Exec(q(`UPDATE signups SET email_idx = ? WHERE token_hash = ?`), ta.app.store.emailKey("carol@example.com"), tokenHash(mt)); err != nil {
			t.Fatal(err)
		}
		if code := probe.do("POST", "/api/verify", map[string]string{"token": mt}, nil); code != 400 {
			t.Fatalf("verify of an altered sign-up row: %d", code)
		}
		if code := probe.do("POST", "/api/login", credentials{"carol@example.com", "mallory's password"}, nil); code != 401 {
			t.Fatalf("log-in to the planted account: %d", code)
		}
	})
}

// serveBackground runs s.Serve on ln until the returned stop is called;
// stop cancels it and waits until Serve has returned, so that nothing it
// started (the sweep, leaving the fleet) writes to the database after
// the test has closed it and while its temporary folder is removed.
func serveBackground(tb testing.TB, s *Service, ln net.Listener) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, io.Discard) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	}
}
