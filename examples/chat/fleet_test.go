package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/examples/internal/fleetbench"
	"github.com/wardlab/ward/internal/pgtest"
)

// BenchmarkFleetRotation is the adopters issue's rotation across a running
// fleet: three ward-chat processes (real processes, normal limits) on one
// database, clients logged in through all three sending requests (80 %
// reads of a conversation, 20 % new messages) while 'ward keyring rotate
// --db' adds a key, waits for every process, promotes, waits and
// re-encrypts. A failed request is any 5xx, a transport error, or a
// message or title that does not open. Then one process is frozen
// (SIGSTOP): the next rotation waits and names it. It reports requests,
// failures, p50/p99 latency and the rotation's duration, on SQLite, and on
// PostgreSQL when WARD_TEST_POSTGRES_URL is set.
//
//	go test ./examples/chat -run '^$' -bench FleetRotation -benchtime 1x
func BenchmarkFleetRotation(b *testing.B) {
	bin := fleetbench.Build(b, "github.com/wardlab/ward/examples/chat/cmd/ward-chat", "github.com/wardlab/ward/cmd/ward")
	fleetbench.ForEachDB(b, pgtest.URL, func(b *testing.B, dbURL, dir string, env []string) { fleetRotation(b, bin, dbURL, dir, env) })
}

func fleetRotation(b *testing.B, bin, dbURL, dir string, env []string) {
	command := func(name string, args ...string) *exec.Cmd { return fleetbench.Command(bin, dir, env, name, args...) }
	chatArgs := []string{"--db", dbURL, "--keyring", filepath.Join(dir, "kr.json")}
	if out, err := command("ward-chat", append([]string{"init"}, chatArgs...)...).CombinedOutput(); err != nil {
		b.Fatalf("init: %v\n%s", err, out)
	}
	procs, urls := fleetbench.Start(b, 3, func() *exec.Cmd {
		return command("ward-chat", append([]string{"serve", "--listen", "127.0.0.1:0"}, chatArgs...)...)
	}, regexp.MustCompile(`on (http://[0-9.:]+)/`))
	// Six users, each signed up through the outbox, each with a
	// conversation; each client talks to all three processes in turn.
	type user struct {
		hc   *http.Client
		conv string
	}
	post := func(hc *http.Client, url string, body any, out any) (int, error) {
		j, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", url, bytes.NewReader(j))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if out != nil {
			json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode, nil
	}
	var users []user
	for i := range 6 {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		email := fmt.Sprintf("u%d@example.com", i)
		creds := credentials{email, "correct horse battery"}
		post(hc, urls[0]+"/api/signup", creds, nil)
		out, err := command("ward-chat", append([]string{"outbox"}, chatArgs...)...).Output()
		if err != nil {
			b.Fatal(err)
		}
		token := ""
		for _, l := range strings.Split(string(out), "\n") {
			if _, t, ok := strings.Cut(l, "#verify="); ok {
				token = strings.TrimSpace(t)
			}
		}
		if code, err := post(hc, urls[1]+"/api/verify", map[string]string{"token": token}, nil); code != 200 {
			b.Fatalf("verify: %d %v", code, err)
		}
		if code, err := post(hc, urls[2]+"/api/login", creds, nil); code != 200 {
			b.Fatalf("log-in: %d %v", code, err)
		}
		var conv Conversation
		if code, err := post(hc, urls[0]+"/api/conversations", map[string]string{"title": "plans " + email}, &conv); code != 201 {
			b.Fatalf("conversation: %d %v", code, err)
		}
		users = append(users, user{hc, fmt.Sprint(conv.ID)})
	}
	// The load: each user in a loop, a request every 20 ms (≥ 200/s in
	// all before latency), 80 % reads.
	ctx, stop := context.WithCancel(context.Background())
	var rec fleetbench.Recorder
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				url := urls[(i+n)%len(urls)] + "/api/conversations/" + u.conv + "/messages"
				start := time.Now()
				var code int
				var body []byte
				var err error
				if n%5 == 4 {
					j, _ := json.Marshal(map[string]string{"body": fmt.Sprint("message ", n)})
					req, _ := http.NewRequest("POST", url, bytes.NewReader(j))
					req.Header.Set("Content-Type", "application/json")
					var resp *http.Response
					if resp, err = u.hc.Do(req); err == nil {
						code = resp.StatusCode
						body, _ = io.ReadAll(resp.Body)
						resp.Body.Close()
					}
				} else {
					var resp *http.Response
					if resp, err = u.hc.Get(url); err == nil {
						code = resp.StatusCode
						body, _ = io.ReadAll(resp.Body)
						resp.Body.Close()
					}
				}
				failure := ""
				if err != nil || code >= 500 || bytes.Contains(body, []byte("integrity error")) {
					failure = fmt.Sprintf("%d %v %.80s", code, err, body)
				}
				rec.Observe(start, failure)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	rotStart := time.Now()
	out, err := command("ward", "keyring", "rotate", "--db", dbURL, "--wait", "2m").CombinedOutput()
	rotation := time.Since(rotStart)
	if err != nil {
		stop()
		wg.Wait()
		b.Fatalf("rotation: %v\n%s", err, out)
	}
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()
	if !strings.Contains(string(out), "3 processes ready to hold key") {
		b.Fatalf("rotation output:\n%s", out)
	}
	// One process frozen: the next rotation waits and names its pid.
	frozen := procs[2]
	frozen.Process.Signal(syscall.SIGSTOP)
	out2, err := command("ward", "keyring", "rotate", "--db", dbURL, "--wait", "8s", "--no-reseal").CombinedOutput()
	frozen.Process.Signal(syscall.SIGCONT)
	if err == nil || !strings.Contains(string(out2), fmt.Sprintf("pid %d", frozen.Process.Pid)) {
		b.Fatalf("rotation with a frozen process: %v\n%s", err, out2)
	}
	rec.Report(b, rotation, rotation+4*time.Second)
}
