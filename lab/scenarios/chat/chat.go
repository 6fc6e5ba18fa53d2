// Package chatlab is the lab scenario "chat", which asks the chat field
// report's question of the whole service: what does encrypting messages
// cost per request? It runs the chat service in process on SQLite and
// measures "send message" (store, assistant reads 50 messages of context,
// store reply) and "load conversation" (50 messages): each request's
// latency and CPU time, the values it sealed and opened (counted in the
// service by an observe.Observer), and the CPU time one seal and one open
// cost, measured in the same run on the service's own stored messages with
// a column of the same binding. Their product over the request's CPU time
// is what the field layer costs the request.
package chatlab

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/examples/chat"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/observe"
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

// Cases beside the operations': one value sealed and one opened.
const (
	SealValue = "value/seal"
	OpenValue = "value/open"
)

func costCase(op string) string { return op + "/encryption-cost" }

// Requests per operation in each profile.
const (
	FullRequests  = 300
	QuickRequests = 60
)

// Run measures both operations, and a value's seal and open.
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
	c, cfg, closeAll, err := startService(ctx, dir)
	if err != nil {
		return err
	}
	defer closeAll()
	counts := &valueCounter{}
	defer observe.Set(observe.Set(counts))
	v, err := openValues(ctx, cfg, c.text)
	if err != nil {
		return err
	}
	defer v.close()
	// One value's seal and open, before and after the requests: the
	// machine's drift over the run shows in their spread.
	seal, open, err := v.measure(ctx, env.Sampling)
	if err != nil {
		return err
	}
	reqs := map[string][]request{}
	for i, op := range ops {
		for range n {
			r, err := c.do(op, counts)
			if err != nil {
				return fmt.Errorf("chat: %s: %w", op, err)
			}
			reqs[op] = append(reqs[op], r)
		}
		env.Progress(i+1, len(ops)+1)
	}
	seal2, open2, err := v.measure(ctx, env.Sampling)
	if err != nil {
		return err
	}
	seal, open = append(seal, seal2...), append(open, open2...)
	env.Record(lab.FromSamples("chat", SealValue, map[string]any{"bytes": len(c.text)}, "cpu_per_value", "ns", seal),
		lab.FromSamples("chat", OpenValue, map[string]any{"bytes": len(c.text)}, "cpu_per_value", "ns", open))
	for _, op := range ops {
		env.Record(results(op, reqs[op], median(seal), median(open))...)
	}
	env.Progress(len(ops)+1, len(ops)+1)
	return nil
}

// results are an operation's request measurements and what the field
// layer costs it: per request, its seals and opens times the median CPU
// time of one, over the request's CPU time.
func results(op string, rs []request, seal, open float64) []lab.Result {
	var wall, cpu, rps, sealed, opened, ward, cost []float64
	for _, r := range rs {
		w := (float64(r.seals)*seal + float64(r.opens)*open) / 1e6 // ms
		wall, cpu, rps = append(wall, r.ms), append(cpu, r.cpu), append(rps, 1000/r.ms)
		sealed, opened, ward = append(sealed, float64(r.seals)), append(opened, float64(r.opens)), append(ward, w*1000)
		if r.cpu > w {
			cost = append(cost, r.cpu/(r.cpu-w))
		}
	}
	p := map[string]any{"op": op, "requests": len(rs)}
	c := lab.FromSamples("chat", costCase(op), map[string]any{"op": op}, "encryption_cost", "x", cost)
	c.Note = "the process's CPU time per request over the same less its seals and opens: the values the service sealed and opened in the request (counted by an observe.Observer) times the median CPU time of one seal and one open (measured in the same run on the service's stored messages, same column binding, same keys)"
	return []lab.Result{lab.FromSamples("chat", op, p, "request_latency", "ms", wall),
		lab.FromSamples("chat", op, p, "request_cpu", "ms", cpu),
		lab.FromSamples("chat", op, p, "requests_per_second", "req/s", rps),
		lab.FromSamples("chat", op, p, "values_sealed", "values", sealed),
		lab.FromSamples("chat", op, p, "values_opened", "values", opened),
		lab.FromSamples("chat", costCase(op), map[string]any{"op": op}, "seal_open_cpu", "µs", ward), c}
}

func median(xs []float64) float64 {
	_, m, _, _ := lab.Summary(xs)
	return m
}

// valueCounter counts the values ward seals and opens in this process.
type valueCounter struct{ seals, opens atomic.Int64 }

func (c *valueCounter) Value(v observe.Value) {
	if v.Op == observe.Seal {
		c.seals.Add(1)
	} else {
		c.opens.Add(1)
	}
}
func (*valueCounter) KMS(observe.KMSCall)           {}
func (*valueCounter) Job(observe.JobBatch)          {}
func (*valueCounter) Rotation(observe.RotationStep) {}
func (*valueCounter) Hash(observe.Hash)             {}
func (c *valueCounter) read() (seals, opens int64)  { return c.seals.Load(), c.opens.Load() }

// values seals and opens message bodies as the service does, with a column
// of the same table, name and binding under the service's keyring and its
// users' keys, on the messages the service stored.
type values struct {
	db   *sql.DB
	col  *field.Column
	rows []storedMessage
	text string
}

type storedMessage struct {
	row field.RowKey
	ct  field.Ciphertext
}

func openValues(ctx context.Context, cfg chat.Config, text string) (*values, error) {
	kr, err := keyring.Load(ctx, cfg.KeyringPath, cfg.KeyService)
	if err != nil {
		return nil, err
	}
	db, _, err := dburl.Open(cfg.DB)
	if err != nil {
		return nil, err
	}
	v := &values{db: db, text: text}
	subjects, err := subject.Open(ctx, subject.Config{DB: db, Dialect: field.SQLite, Keyring: kr,
		Ledger: &ledger.Ledger{DB: db, Dialect: field.SQLite}, Namespace: "users"})
	if err == nil {
		v.col, err = field.NewColumn(kr, "messages", "body", field.Bind("conversation_id", "user_id", "role"), field.PerSubject(subjects, "user_id"))
	}
	if err == nil {
		err = v.load(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("chat: the lab's column of messages.body: %w", err)
	}
	return v, nil
}

// load reads the service's stored messages, and opens each once: a
// column that differs from the service's opens none.
func (v *values) load(ctx context.Context) error {
	rows, err := v.db.QueryContext(ctx, `SELECT id, conversation_id, user_id, role, body FROM messages ORDER BY id LIMIT 50`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, conv, user int64
		var role string
		var raw []byte
		if err := rows.Scan(&id, &conv, &user, &role, &raw); err != nil {
			return err
		}
		ct, err := field.ParseCiphertext(raw)
		if err != nil {
			return err
		}
		m := storedMessage{field.RowInt(id).With(conv, user, role), ct}
		if _, err := v.col.OpenString(m.row, m.ct); err != nil {
			return err
		}
		v.rows = append(v.rows, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(v.rows) == 0 {
		return fmt.Errorf("no stored messages")
	}
	return nil
}

// measure returns, per round, the CPU time of one seal and one open
// (nanoseconds), interleaved.
func (v *values) measure(ctx context.Context, s lab.Sampling) (seal, open []float64, err error) {
	i := 0
	// each runs do on n stored messages in turn.
	each := func(do func(storedMessage) error) func(int) error {
		return func(n int) error {
			for range n {
				m := v.rows[i%len(v.rows)]
				i++
				if err := do(m); err != nil {
					return err
				}
			}
			return nil
		}
	}
	rounds, err := lab.Interleave(ctx, s.CPU(), each(func(m storedMessage) error {
		_, err := v.col.SealString(m.row, v.text)
		return err
	}), each(func(m storedMessage) error {
		_, err := v.col.OpenString(m.row, m.ct)
		return err
	}))
	if err != nil {
		return nil, nil, err
	}
	return rounds[0], rounds[1], nil
}

func (v *values) close() { v.db.Close() }

// startService starts the service with a signed-up client holding a
// 50-message conversation.
func startService(ctx context.Context, dir string) (*client, chat.Config, func(), error) {
	cfg := chat.Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate()}
	if _, err := chat.Init(ctx, cfg); err != nil {
		return nil, cfg, nil, err
	}
	app, err := chat.Open(ctx, cfg)
	if err != nil {
		return nil, cfg, nil, err
	}
	ts := httptest.NewServer(app.Handler())
	closeAll := func() { ts.Close(); app.Close() }
	c, err := newClient(ctx, ts.URL, app)
	if err != nil {
		closeAll()
		return nil, cfg, nil, err
	}
	return c, cfg, closeAll, nil
}

// client is a signed-up user with a conversation of 50 messages.
type client struct {
	hc      *http.Client
	base    string
	msgPath string
	body    string // the request's JSON
	text    string // the message in it
}

func newClient(ctx context.Context, base string, app *chat.Service) (*client, error) {
	jar, _ := cookiejar.New(nil)
	c := &client{hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}, base: base, text: strings.Repeat("今日の予定を教えてください。", 20)}
	c.body = `{"body":"` + c.text + `"}`
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

// request is one request's elapsed and process CPU milliseconds, and the
// values ward sealed and opened in it.
type request struct {
	ms, cpu      float64
	seals, opens int64
}

// do times one request: load the last 50 messages, or send one (which
// stores it, lets the assistant read 50 messages and stores the reply).
// The client, the service and its SQLite all run in this process, so the
// process's CPU time is the request's whole cost, and another process's
// load does not count against it.
func (c *client) do(op string, counts *valueCounter) (request, error) {
	s0, o0 := counts.read()
	start, cpu := time.Now(), lab.ProcessCPU.Read()
	since := func() request {
		s1, o1 := counts.read()
		return request{lab.Milliseconds(time.Since(start)), lab.Milliseconds(lab.ProcessCPU.Read() - cpu), s1 - s0, o1 - o0}
	}
	if op == SendMessage {
		if err := c.post(c.msgPath, c.body, nil); err != nil {
			return request{}, err
		}
		return since(), nil
	}
	resp, err := c.hc.Get(c.base + c.msgPath)
	if err != nil {
		return request{}, err
	}
	var ms []json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&ms)
	resp.Body.Close()
	if err != nil || len(ms) != 50 {
		return request{}, fmt.Errorf("load: %d messages, %v", len(ms), err)
	}
	return since(), nil
}
