package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// pythonEnv names a Python with the ward package installed (.ci/run makes
// one: pip install ./python).
const pythonEnv = "WARD_PYTHON"

// workerPython returns that Python, skipping (failing in CI) without it.
func workerPython(t *testing.T) string {
	py := os.Getenv(pythonEnv)
	if py == "" {
		if os.Getenv("WARD_CI") != "" {
			t.Fatalf("%s is not set: .ci/run installs the Python package", pythonEnv)
		}
		t.Skipf("%s is not set (a Python with the ward package: pip install ./python)", pythonEnv)
	}
	return py
}

// TestPythonAssistant runs the assistant as the Python worker: it answers
// from the conversation it was granted, opening each body with a subject
// grant of messages.body; the grant opens neither the user's title nor
// another user's messages; a private user's conversation never reaches it.
func TestPythonAssistant(t *testing.T) {
	py := workerPython(t)
	forEachURL(t, func(t *testing.T, url string) {
		ta := newTestApp(t, Config{DB: url, KeyringPath: filepath.Join(t.TempDir(), "kr.json"), KeyService: local.Generate(),
			AssistantWorker: []string{py, "worker/assistant.py"}})
		w := ta.app.server.worker
		alice := ta.client(t)
		conv := alice.signup("alice@example.com")
		for i, body := range []string{"今日の予定は歯医者です", "and then the library"} {
			var reply []Message
			if code := alice.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": body}, &reply); code != 201 {
				t.Fatalf("send: %d", code)
			}
			want := fmt.Sprintf("[python assistant] I read %d messages of context (%d from you). You said: %q", 2*i+1, i+1, body)
			if len(reply) != 2 || reply[1].Body != want {
				t.Fatalf("reply %+v, want %q", reply, want)
			}
		}
		if w.Answered() != 2 {
			t.Fatalf("the worker answered %d requests, want 2", w.Answered())
		}
		// Alice's page shows both readings by the worker, newest first.
		var access struct{ Entries []AccessEntry }
		if code := alice.do("GET", "/api/access", nil, &access); code != 200 || len(access.Entries) != 2 ||
			access.Entries[0].Reader != ReaderAssistantWorker || access.Entries[0].Messages != 3 || access.Entries[1].Messages != 1 {
			t.Fatalf("access log: %d %+v", code, access.Entries)
		}
		leastPrivilege(t, ta, conv.ID)
		answered := w.Answered()

		bob := ta.client(t)
		bconv := bob.signup("bob@example.com")
		if code := bob.do("POST", "/api/private", map[string]any{"password": "correct horse"}, nil); code != 200 {
			t.Fatalf("private: %d", code)
		}
		var reply []Message
		if code := bob.do("POST", fmt.Sprintf("/api/conversations/%d/messages", bconv.ID), map[string]string{"body": "private plans"}, &reply); code != 201 {
			t.Fatalf("send: %d", code)
		}
		if len(reply) != 2 || !strings.HasPrefix(reply[1].Body, "[stand-in assistant]") || w.Answered() != answered {
			t.Fatalf("a private user's conversation: reply %+v, worker answered %d", reply, w.Answered())
		}
	})
}

// leastPrivilege sends the worker alice's grant with her conversation's
// title in place of a message, and with her messages presented as
// another user's: both refused by the worker, which holds nothing else.
func leastPrivilege(t *testing.T, ta *testApp, conv int64) {
	t.Helper()
	ctx := context.Background()
	st := ta.app.store
	var user int64
	var title []byte
	if err := ta.db.QueryRow(st.q(`SELECT user_id, title FROM conversations WHERE id = ?`), conv).Scan(&user, &title); err != nil {
		t.Fatal(err)
	}
	req, ok, err := st.workerHistory(ctx, user, conv, contextMessages)
	if err != nil || !ok {
		t.Fatalf("history: %v %v", ok, err)
	}
	tc, _ := field.ParseCiphertext(title)
	asTitle := *req
	asTitle.Messages = append([]workerMessage{{ID: fmt.Sprint(conv), Role: "user", Body: keyring.EncodeText(tc.Bytes())}}, req.Messages...)
	if _, err := ta.app.server.worker.ask(ctx, &asTitle); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the worker opened a title with a grant of message bodies: %v", err)
	}
	other := *req
	other.User = fmt.Sprint(user + 1)
	if _, err := ta.app.server.worker.ask(ctx, &other); err == nil {
		t.Error("the worker answered for another user with alice's grant")
	}
	if _, err := ta.app.server.worker.ask(ctx, req); err != nil {
		t.Errorf("the worker refused the request as sent: %v", err)
	}
}
