// Package chatlab is the lab scenario "chat", which asks the chat field
// report's question of the whole service: what does encrypting messages cost per
// request? It runs the chat service in process on SQLite twice, with
// encryption on and off, and measures "send message" (store, assistant
// reads 50 messages of context, store reply) and "load conversation"
// (50 messages).
package chatlab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wardlab/ward/examples/chat"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lab"
)

// Scenario is the "chat" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "chat".
func (Scenario) Name() string { return "chat" }

// Title names the topic.
func (Scenario) Title() string { return "The encrypted chat service, request by request" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does encrypting every message cost the chat service per request?"
}

// Operations measured.
const (
	SendMessage      = "send-message"
	LoadConversation = "load-conversation-50"
)

var ops = []string{LoadConversation, SendMessage}

// Encryption modes, measured side by side.
const (
	Plaintext = "plaintext"
	Encrypted = "encrypted"
)

var modes = [2]string{Plaintext, Encrypted}

// caseKey names a measured case.
type caseKey struct{ op, mode string }

func (k caseKey) name() string { return k.op + "/" + k.mode }

func costCase(op string) string { return op + "/encryption-cost" }

// Requests per operation and mode in each profile.
const (
	FullRequests  = 300
	QuickRequests = 60
)

// Run measures both operations with encryption on and off.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	n := FullRequests
	if env.Quick {
		n = QuickRequests
	}
	dir, err := os.MkdirTemp("", "ward-chat-lab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	clients, closeAll, err := startServices(ctx, dir)
	if err != nil {
		return err
	}
	defer closeAll()
	// Both services run at once and are measured alternately, request by
	// request, in alternating order (off on, then on off), so that both see
	// the same machine state and neither always runs first.
	for i, op := range ops {
		var wall, cpu [2][]float64
		for j := range n {
			for k := range clients {
				m := k
				if j%2 == 1 {
					m = len(clients) - 1 - k
				}
				t, err := clients[m].do(op)
				if err != nil {
					return fmt.Errorf("chat (%s): %w", modes[m], err)
				}
				wall[m], cpu[m] = append(wall[m], t.ms), append(cpu[m], t.cpu)
			}
		}
		for m, mode := range modes {
			p := map[string]any{"op": op, "encryption": mode, "requests": n}
			rps := make([]float64, n)
			for j, v := range wall[m] {
				rps[j] = 1000 / v
			}
			k := caseKey{op, mode}.name()
			env.Record(lab.FromSamples("chat", k, p, "request_latency", "ms", wall[m]),
				lab.FromSamples("chat", k, p, "request_cpu", "ms", cpu[m]),
				lab.FromSamples("chat", k, p, "requests_per_second", "req/s", rps))
		}
		env.Record(lab.PairedRatio("chat", costCase(op), map[string]any{"op": op}, "encryption_cost", cpu[1], cpu[0],
			"the process's CPU time per request (client, server and SQLite, all in the lab's process) with encryption over without, per alternating pair of requests; same service, same SQLite, same run"))
		env.Progress(i+1, len(ops))
	}
	return nil
}

// identityCodec stores plaintext as it is: the baseline the lab measures
// the field layer's cost against, passed to the service from outside.
type identityCodec struct{}

func (identityCodec) Seal(_ *field.Column, _ field.RowKey, plaintext string) (any, error) {
	return []byte(plaintext), nil
}

func (identityCodec) Open(_ *field.Column, _ field.RowKey, stored []byte) (string, error) {
	return string(stored), nil
}

// startServices starts the service twice, encryption off and on, each
// with a signed-up client holding a 50-message conversation.
func startServices(ctx context.Context, dir string) ([2]*client, func(), error) {
	var clients [2]*client
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for i, mode := range modes {
		cfg := chat.Config{DB: "sqlite:" + filepath.Join(dir, mode+".db"), KeyringPath: filepath.Join(dir, mode+"-kr.json"),
			KeyService: local.Generate()}
		if mode == Plaintext {
			cfg.Codec = identityCodec{}
		}
		if _, err := chat.Init(ctx, cfg); err != nil {
			closeAll()
			return clients, nil, err
		}
		app, err := chat.Open(ctx, cfg)
		if err != nil {
			closeAll()
			return clients, nil, err
		}
		ts := httptest.NewServer(app.Handler())
		closers = append(closers, ts.Close, func() { app.Close() })
		if clients[i], err = newClient(ctx, ts.URL, app); err != nil {
			closeAll()
			return clients, nil, fmt.Errorf("chat (%s): %w", mode, err)
		}
	}
	return clients, closeAll, nil
}

// client is a signed-up user with a conversation of 50 messages.
type client struct {
	hc      *http.Client
	base    string
	msgPath string
	body    string
}

func newClient(ctx context.Context, base string, app *chat.Service) (*client, error) {
	jar, _ := cookiejar.New(nil)
	c := &client{hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}, base: base,
		body: `{"body":"` + strings.Repeat("今日の予定を教えてください。", 20) + `"}`}
	creds := `{"email":"lab@example.com","password":"correct horse battery"}`
	if err := c.post("/api/signup", creds, nil); err != nil {
		return nil, err
	}
	// The account exists once the link e-mailed to it is followed.
	ms, err := app.Outbox(ctx, 10)
	if err != nil {
		return nil, err
	}
	token := ""
	for _, m := range ms {
		if _, t, ok := strings.Cut(m.Body, "#verify="); ok {
			token = t
		}
	}
	if token == "" {
		return nil, fmt.Errorf("no sign-up link in the outbox")
	}
	if err := c.post("/api/verify", `{"token":"`+token+`"}`, nil); err != nil {
		return nil, err
	}
	if err := c.post("/api/login", creds, nil); err != nil {
		return nil, err
	}
	var conv struct {
		ID string `json:"id"`
	}
	if err := c.post("/api/conversations", `{"title":"lab"}`, &conv); err != nil {
		return nil, err
	}
	c.msgPath = "/api/conversations/" + conv.ID + "/messages"
	for range 25 { // 50 messages with the replies
		if err := c.post(c.msgPath, c.body, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *client) post(path, body string, out any) error {
	resp, err := c.hc.Post(c.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// timing is one request's elapsed and process CPU milliseconds.
type timing struct{ ms, cpu float64 }

// do times one request: load the last 50 messages, or send one (which
// stores it, lets the assistant read 50 messages and stores the reply).
// The client, the service and its SQLite all run in this process, so the
// process's CPU time is the request's whole cost, and another process's
// load does not count against it.
func (c *client) do(op string) (timing, error) {
	start, cpu := time.Now(), lab.ProcessCPU.Read()
	since := func() timing {
		return timing{lab.Milliseconds(time.Since(start)), lab.Milliseconds(lab.ProcessCPU.Read() - cpu)}
	}
	if op == SendMessage {
		if err := c.post(c.msgPath, c.body, nil); err != nil {
			return timing{}, err
		}
		return since(), nil
	}
	resp, err := c.hc.Get(c.base + c.msgPath)
	if err != nil {
		return timing{}, err
	}
	var ms []json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&ms)
	resp.Body.Close()
	if err != nil || len(ms) != 50 {
		return timing{}, fmt.Errorf("load: %d messages, %v", len(ms), err)
	}
	return since(), nil
}
