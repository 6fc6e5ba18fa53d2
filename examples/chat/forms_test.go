package chat

import (
	"bytes"
	"context"
	"crypto/fips140"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestBesideTheReleaseBefore: while a process of the release before
// (registered without forms: it reads ciphertext v3 and v1 row MACs only)
// serves the same database, the service writes messages as v3 and session
// MACs as v1, so that process reads everything; once it leaves, the fleet
// opens v4 and integrity records v2 and the service writes them.
func TestBesideTheReleaseBefore(t *testing.T) {
	forEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		cfg := Config{DB: url, KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: local.Generate(), Limits: testLimits, KeyringPoll: 100 * time.Millisecond, Log: failureLog(t)}
		kr, err := Init(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		db, dialect, err := openDB(url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before, err := (&fleet.Registry{DB: db, Dialect: dialect}).Join(ctx, kr, 200*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		app, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(app.Handler())
		defer func() { ts.Close(); app.Close() }()
		ta := &testApp{app: app, cfg: cfg, ts: ts, db: app.db}
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		send := func(body string) {
			if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": body}, nil); code != 201 {
				t.Fatalf("send: %d", code)
			}
		}
		// newest returns the newest message's version and how many session
		// MACs are v2.
		newest := func() (version byte, v2 int) {
			var raw []byte
			if err := db.QueryRow(`SELECT body FROM messages ORDER BY created DESC, id DESC LIMIT 1`).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			rows, err := db.Query(`SELECT mac FROM sessions`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var mac []byte
				if err := rows.Scan(&mac); err != nil {
					t.Fatal(err)
				}
				if len(mac) == field.RowMACSizeV2 {
					v2++
				}
			}
			ct, err := field.ParseCiphertext(raw)
			if err != nil {
				t.Fatal(err)
			}
			return ct.Version(), v2
		}
		send("while the release before serves")
		want := byte(3)
		if fips140.Enabled() {
			want = 4 // v3 cannot be sealed in the FIPS 140-3 mode (field.Column.WriteVersion)
		}
		if v, n := newest(); v != want || n != 0 {
			t.Fatalf("beside the release before: a v%d message and %d v2 session MACs, want v%d and none", v, n, want)
		}
		if err := before.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // two heartbeats open what every process reads
			if err := app.member.Beat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		again := ta.client(t)
		if code := again.do("POST", "/api/login", credentials{"alice@example.com", "correct horse"}, nil); code != 200 {
			t.Fatalf("log-in: %d", code)
		}
		alice = again
		send("once it left")
		if v, n := newest(); v != 4 || n != 1 {
			t.Fatalf("after the release before left: a v%d message and %d v2 session MACs, want v4 and one", v, n)
		}
	})
}

// TestUsageWarner: a key past 2^30 seals is logged as due for rotation
// once an hour, not at every heartbeat; a key below is not.
func TestUsageWarner(t *testing.T) {
	var buf bytes.Buffer
	warn := usageWarner(slog.New(slog.NewTextHandler(&buf, nil)))
	due := fleet.KeyUsage{Key: 0xabcd1234, Algorithm: keyring.AES256GCM, Seals: fleet.WarnAt}
	fine := fleet.KeyUsage{Key: 0x1111, Algorithm: keyring.AES256GCM, Seals: 5}
	for range 3 {
		warn([]fleet.KeyUsage{due, fine})
	}
	if n := strings.Count(buf.String(), "key due for rotation"); n != 1 || !strings.Contains(buf.String(), "abcd1234") {
		t.Fatalf("logged %d times: %q", n, buf.String())
	}
}
