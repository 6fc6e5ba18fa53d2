// Package chatlab is the lab scenario "chat", which answers seed 000's
// question for the whole service: what does encrypting messages cost per
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
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lab"
)

// Scenario is the "chat" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "chat".
func (Scenario) Name() string { return "chat" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 000's service: requests per second for send message and load conversation, encryption on vs off"
}

// Run measures both operations with encryption on and off.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	n := 300
	if env.Quick {
		n = 60
	}
	dir, err := os.MkdirTemp("", "ward-chat-lab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Both services run at once and are measured alternately, request by
	// request, so that both see the same machine state.
	var clients [2]*client
	for i, enc := range []bool{false, true} {
		mode := modes[i]
		cfg := chat.Config{DB: "sqlite:" + filepath.Join(dir, mode+".db"), KeyringPath: filepath.Join(dir, mode+"-kr.json"),
			KeyService: local.Generate(), DisableEncryption: !enc}
		if _, err := chat.Init(ctx, cfg); err != nil {
			return err
		}
		app, err := chat.Open(ctx, cfg)
		if err != nil {
			return err
		}
		defer app.Close()
		ts := httptest.NewServer(app.Handler())
		defer ts.Close()
		if clients[i], err = newClient(ts.URL); err != nil {
			return fmt.Errorf("chat (%s): %w", mode, err)
		}
	}
	samples := map[string][]float64{}
	for _, op := range []string{"load-conversation-50", "send-message"} {
		for j := 0; j < n; j++ {
			for i, c := range clients {
				d, err := c.do(op)
				if err != nil {
					return fmt.Errorf("chat (%s): %w", modes[i], err)
				}
				samples[op+"/"+modes[i]] = append(samples[op+"/"+modes[i]], d)
			}
		}
		env.Progress(len(samples)/2, 2)
	}
	med := map[string]float64{}
	for _, op := range []string{"send-message", "load-conversation-50"} {
		for _, mode := range modes {
			ms := samples[op+"/"+mode]
			p := map[string]any{"op": op, "encryption": mode, "requests": n}
			r := lab.FromSamples("chat", op+"/"+mode, p, "request_latency", "ms", ms)
			rps := make([]float64, len(ms))
			for j, v := range ms {
				rps[j] = 1000 / v
			}
			env.Record(r, lab.FromSamples("chat", op+"/"+mode, p, "requests_per_second", "req/s", rps))
			med[op+"/"+mode] = r.Median
		}
	}
	for _, op := range []string{"send-message", "load-conversation-50"} {
		on, off := med[op+"/encrypted"], med[op+"/plaintext"]
		if on > 0 && off > 0 {
			env.Record(lab.Derived("chat", op+"/encryption-cost", map[string]any{"op": op}, "overhead", "%", (on/off-1)*100,
				"median request latency with encryption over without, minus 1; same service, same SQLite, same run"))
		}
	}
	return nil
}

var modes = [2]string{"plaintext", "encrypted"}

// client is a signed-up user with a conversation of 50 messages.
type client struct {
	hc      *http.Client
	base    string
	msgPath string
	body    string
}

func newClient(base string) (*client, error) {
	jar, _ := cookiejar.New(nil)
	c := &client{hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}, base: base,
		body: `{"body":"` + strings.Repeat("今日の予定を教えてください。", 20) + `"}`}
	creds := `{"email":"lab@example.com","password":"correct horse battery"}`
	if err := c.post("/api/signup", creds, nil); err != nil {
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

// do times one request: load the last 50 messages, or send one (which
// stores it, lets the assistant read 50 messages and stores the reply).
func (c *client) do(op string) (float64, error) {
	start := time.Now()
	if op == "send-message" {
		if err := c.post(c.msgPath, c.body, nil); err != nil {
			return 0, err
		}
		return float64(time.Since(start).Nanoseconds()) / 1e6, nil
	}
	resp, err := c.hc.Get(c.base + c.msgPath)
	if err != nil {
		return 0, err
	}
	var ms []json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&ms)
	resp.Body.Close()
	if err != nil || len(ms) != 50 {
		return 0, fmt.Errorf("load: %d messages, %v", len(ms), err)
	}
	return float64(time.Since(start).Nanoseconds()) / 1e6, nil
}
