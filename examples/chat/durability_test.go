package chat

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/journal"
	"github.com/wardlab/ward/kms/local"
)

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestForgetJournal: without a forget journal (and with no synchronous
// standby) the service warns at start that deletions a failover or
// restore loses come back; with ForgetJournal it says deletions are
// journaled, and a deleted account is in the journal — as a keyed hash,
// its ID nowhere in the folder.
func TestForgetJournal(t *testing.T) {
	forEachURL(t, func(t *testing.T, url string) {
		dir := t.TempDir()
		var without, with syncBuffer
		cfg := Config{DB: url, KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(), Limits: testLimits,
			Log: slog.New(slog.NewTextHandler(&without, nil))}
		ta := newTestApp(t, cfg)
		if s := without.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "come back") {
			t.Fatalf("start without a journal logs: %s", s)
		}
		ta.app.Close()
		cfg.ForgetJournal, cfg.Log = filepath.Join(dir, "forgets"), slog.New(slog.NewTextHandler(&with, nil))
		app, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		if s := with.String(); !strings.Contains(s, "forget journal") || strings.Contains(s, "level=WARN msg=durability") {
			t.Fatalf("start with a journal logs: %s", s)
		}
		ta = &testApp{app: app, cfg: cfg, db: app.db}
		ta.ts = httptest.NewServer(app.Handler())
		defer ta.ts.Close()
		alice := ta.client(t)
		alice.signup("alice@example.com")
		uid := userID(t, ta, "alice@example.com")
		if c := alice.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil); c != 200 {
			t.Fatalf("delete: %d", c)
		}
		st, err := app.ledger.Verified(context.Background(), app.kr)
		if err != nil {
			t.Fatal(err)
		}
		r, err := journal.Read(app.kr, st.Database, cfg.ForgetJournal)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Forgotten(subjectNamespace, fmt.Sprint(uid)); !ok || r.Count(subjectNamespace) != 1 {
			t.Fatalf("the journal does not record the deletion: %+v", r)
		}
	})
}
