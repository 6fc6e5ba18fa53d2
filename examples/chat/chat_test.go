package chat

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/kms/local"
)

type testApp struct {
	app *Service
	cfg Config
	ts  *httptest.Server
	db  *sql.DB
}

// forEachDB runs fn on SQLite and, when WARD_TEST_POSTGRES_URL is set, on
// PostgreSQL (a fresh schema per test).
func forEachDB(t *testing.T, fn func(t *testing.T, ta *testApp)) {
	forEachURL(t, func(t *testing.T, url string) {
		fn(t, newTestApp(t, Config{DB: url, KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: local.Generate()}))
	})
}

// forEachURL runs fn with the URL of a fresh SQLite file and, when
// WARD_TEST_POSTGRES_URL is set, of a fresh PostgreSQL schema.
func forEachURL(t *testing.T, fn func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, "sqlite:"+filepath.Join(t.TempDir(), "chat.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		if url == "" {
			t.Skipf("%s is not set (.ci/run sets it)", pgtest.Env)
		}
		fn(t, url)
	})
	t.Run("mysql", func(t *testing.T) {
		url := mytest.URL(t)
		if url == "" {
			t.Skipf("%s is not set (.ci/run sets it)", mytest.Env)
		}
		fn(t, url)
	})
}

// testLimits are generous address limits, so that tests of other things
// are not throttled; the abuse tests set their own.
var testLimits = Limits{LoginPerMinute: 10_000, SignupPerHour: 10_000, SignupsPerMinute: 10_000, ResetsPerHour: 10_000, ResetsPerMinute: 10_000}

func newTestApp(t *testing.T, cfg Config) *testApp {
	t.Helper()
	if cfg.Limits == (Limits{}) {
		cfg.Limits = testLimits
	}
	if cfg.KeyringPoll == 0 {
		cfg.KeyringPoll = 100 * time.Millisecond // rotations wait for every open service
	}
	if cfg.Log == nil {
		cfg.Log = failureLog(t)
	}
	if _, err := Init(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	app, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(app.Handler())
	t.Cleanup(func() { ts.Close(); app.Close() })
	return &testApp{app: app, cfg: cfg, ts: ts, db: app.db}
}

// failureLog returns a logger whose lines the test prints only if it
// fails, so a handler's 500 names its cause; lines written after the test
// ends are kept, never sent to a finished t.
func failureLog(t *testing.T) *slog.Logger {
	var buf syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type client struct {
	t   *testing.T
	hc  *http.Client
	ts  *httptest.Server
	app *Service // for the outbox
}

func (ta *testApp) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, hc: &http.Client{Jar: jar}, ts: ta.ts, app: ta.app}
}

// verificationLink returns the token of the newest sign-up link the
// outbox holds for email ("" if none).
func verificationLink(t testing.TB, app *Service, email string) string {
	return outboxLink(t, app, email, "#verify=")
}

// outboxLink returns the token after marker in the newest outbox message
// to email that has one ("" if none).
func outboxLink(t testing.TB, app *Service, email, marker string) string {
	t.Helper()
	ms, err := app.Outbox(context.Background(), 100_000)
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, m := range ms {
		if _, tok, ok := strings.Cut(m.Body, marker); ok && m.To == email {
			token = tok
		}
	}
	return token
}

func outboxText(t testing.TB, app *Service) string {
	t.Helper()
	ms, err := app.Outbox(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "to %s: %s\n", m.To, m.Body)
	}
	return b.String()
}

// register signs up and follows the link in the outbox, as a user reading
// their mail would.
func (c *client) register(email, password string) {
	c.t.Helper()
	if code := c.do("POST", "/api/signup", credentials{email, password}, nil); code != 202 {
		c.t.Fatalf("signup %s: %d", email, code)
	}
	token := verificationLink(c.t, c.app, email)
	if token == "" {
		c.t.Fatalf("no verification link for %s in the outbox", email)
	}
	if code := c.do("POST", "/api/verify", map[string]string{"token": token}, nil); code != 200 {
		c.t.Fatalf("verify %s: %d", email, code)
	}
}

func (c *client) do(method, path string, body any, out any) int {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, c.ts.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func (c *client) signup(email string) Conversation {
	c.t.Helper()
	c.register(email, "correct horse")
	if code := c.do("POST", "/api/login", credentials{email, "correct horse"}, nil); code != 200 {
		c.t.Fatalf("login %s: %d", email, code)
	}
	var conv Conversation
	if code := c.do("POST", "/api/conversations", map[string]string{"title": "Plans for " + email}, &conv); code != 201 {
		c.t.Fatalf("conversation: %d", code)
	}
	return conv
}

func TestChatAPI(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		var reply []Message
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "今日の予定は歯医者です"}, &reply); code != 201 {
			t.Fatalf("send: %d", code)
		}
		if len(reply) != 2 || reply[1].Role != "assistant" || !strings.Contains(reply[1].Body, "歯医者") {
			t.Fatalf("reply %+v", reply)
		}
		var msgs []Message
		alice.do("GET", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), nil, &msgs)
		if len(msgs) != 2 || msgs[0].Body != "今日の予定は歯医者です" {
			t.Fatalf("messages %+v", msgs)
		}
		// The database holds no plaintext: not the message, the title or the e-mail.
		var all bytes.Buffer
		for _, q := range []string{"SELECT body FROM messages", "SELECT title FROM conversations", "SELECT email FROM users"} {
			rows, _ := ta.db.Query(q)
			for rows.Next() {
				var b []byte
				rows.Scan(&b)
				all.Write(b)
			}
			rows.Close()
		}
		for _, plain := range []string{"歯医者", "Plans for", "alice@example.com"} {
			if bytes.Contains(all.Bytes(), []byte(plain)) {
				t.Fatalf("plaintext %q in the database", plain)
			}
		}
		var out bytes.Buffer
		Inspect(context.Background(), ta.cfg.DB, &out)
		if !strings.Contains(out.String(), "v4, the user's own key, version") || strings.Contains(out.String(), "歯医者") || !strings.Contains(out.String(), ta.app.kr.ID()) {
			t.Fatalf("inspect-db: %s", out.String())
		}
		// Another user cannot read or write alice's conversation: 404, as for a missing one.
		bob := ta.client(t)
		bob.signup("bob@example.com")
		for _, path := range []string{fmt.Sprintf("/api/conversations/%d/messages", conv.ID), "/api/conversations/12345/messages"} {
			if code := bob.do("GET", path, nil, nil); code != 404 {
				t.Fatalf("bob reads %s: %d", path, code)
			}
		}
		if code := bob.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": "x"}, nil); code != 404 {
			t.Fatalf("bob writes: %d", code)
		}
		// Bad input.
		anon := ta.client(t)
		if code := anon.do("GET", "/api/conversations", nil, nil); code != 401 {
			t.Fatalf("anonymous: %d", code)
		}
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), "{not json", nil); code != 400 {
			t.Fatalf("malformed JSON: %d", code)
		}
		if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": strings.Repeat("x", 9000)}, nil); code != 400 {
			t.Fatalf("oversized message: %d", code)
		}
		if code := alice.do("POST", "/api/signup", strings.Repeat("x", 20000), nil); code != 413 && code != 400 {
			t.Fatalf("oversized body: %d", code)
		}
		var answer, fresh map[string]string
		if code := alice.do("POST", "/api/signup", credentials{"ALICE@example.com ", "another password"}, &answer); code != 202 {
			t.Fatalf("duplicate (case-folded) e-mail: %d", code)
		}
		if code := alice.do("POST", "/api/signup", credentials{"new@example.com", "another password"}, &fresh); code != 202 || fresh["status"] != answer["status"] {
			t.Fatalf("sign-up tells existing from new addresses: %v vs %v", answer, fresh)
		}
		if code := alice.do("POST", "/api/login", credentials{"alice@example.com", "another password"}, nil); code != 401 {
			t.Fatalf("a duplicate sign-up changed the password: %d", code)
		}
		// Log-in finds the account through the blind index; wrong passwords are rate-limited.
		again := ta.client(t)
		if code := again.do("POST", "/api/login", credentials{"Alice@Example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("login: %d", code)
		}
		eve := ta.client(t)
		codes := []int{}
		for range 6 {
			codes = append(codes, eve.do("POST", "/api/login", credentials{"alice@example.com", "wrong"}, nil))
		}
		if codes[0] != 401 || codes[4] != 401 || codes[5] != 429 {
			t.Fatalf("rate limit: %v", codes)
		}
		if code := eve.do("POST", "/api/login", credentials{"nobody@example.com", "wrong"}, nil); code != 401 {
			t.Fatalf("unknown account: %d", code)
		}
		// A tampered ciphertext: that message reports an integrity error, the rest load.
		var id int64
		var raw []byte
		ta.db.QueryRow(ta.app.store.q(`SELECT id, body FROM messages WHERE role = 'user'`)).Scan(&id, &raw)
		raw[len(raw)-1] ^= 1
		ta.db.Exec(ta.app.store.q(`UPDATE messages SET body = ? WHERE id = ?`), raw, id)
		msgs = nil
		if code := alice.do("GET", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), nil, &msgs); code != 200 || len(msgs) != 2 {
			t.Fatalf("after tampering: %d %+v", code, msgs)
		}
		if msgs[0].Error == "" || msgs[0].Body != "" || msgs[1].Error != "" {
			t.Fatalf("tampered message not reported: %+v", msgs)
		}
	})
}

// TestChatWhileRotating: many users chat while the keyring rotates and
// every column is re-encrypted; afterwards every message is readable by
// its owner, under the new key, and by nobody else.
func TestChatWhileRotating(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		const users, msgs = 6, 15
		clients := make([]*client, users)
		convs := make([]Conversation, users)
		for i := range clients {
			clients[i] = ta.client(t)
			convs[i] = clients[i].signup(fmt.Sprintf("user%d@example.com", i))
		}
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range msgs {
					if code := clients[i].do("POST", fmt.Sprintf("/api/conversations/%d/messages", convs[i].ID), map[string]string{"body": fmt.Sprintf("u%d m%d", i, j)}, nil); code != 201 {
						t.Errorf("send: %d", code)
						return
					}
				}
			}()
		}
		var out bytes.Buffer
		if err := ta.app.Rotate(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		// Messages written after the re-encryption pass are under the new
		// key already; a second pass must find nothing left.
		if err := ta.app.Rotate(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		primary := ta.app.kr.Primary().ID
		for i, c := range clients {
			var ms []Message
			c.do("GET", fmt.Sprintf("/api/conversations/%d/messages", convs[i].ID), nil, &ms)
			if len(ms) != 2*msgs {
				t.Fatalf("user %d: %d messages", i, len(ms))
			}
			seen := map[string]bool{}
			for _, m := range ms {
				if m.Error != "" {
					t.Fatalf("user %d: %s", i, m.Error)
				}
				if m.Role == "user" {
					seen[m.Body] = true
				}
			}
			for j := range msgs {
				if !seen[fmt.Sprintf("u%d m%d", i, j)] {
					t.Fatalf("user %d lost message %d", i, j)
				}
			}
			other := clients[(i+1)%users]
			if code := other.do("GET", fmt.Sprintf("/api/conversations/%d/messages", convs[i].ID), nil, nil); code != 404 {
				t.Fatalf("user %d's conversation readable by another: %d", i, code)
			}
		}
		// Every message is sealed under its user's own key, and every
		// user's key is wrapped under the primary key.
		rows, _ := ta.db.Query(`SELECT body FROM messages`)
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			rows.Scan(&raw)
			if _, ok := keycore.SubjectKeyVersion(raw); !ok {
				t.Fatalf("a message is not under its user's key: %x", raw[:8])
			}
		}
		census, err := ta.app.store.subjects.Census(context.Background())
		if err != nil || len(census.ByKey) != 1 || census.ByKey[primary] != users {
			t.Fatalf("user keys after the rotation: %+v %v (primary %v)", census, err, primary)
		}
	})
}
