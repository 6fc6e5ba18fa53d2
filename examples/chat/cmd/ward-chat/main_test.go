package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/examples/chat"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/cli/clitest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ward-chat": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the real ward-chat binary on the scripts in
// testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// flagTests names, for every flag of ward-chat, a test that sets it and
// asserts an effect that differs from the default. TestFlagTable keeps it
// complete.
var flagTests = map[string]string{
	"ward-chat --allow-unpeppered-hashes": "TestServiceFlags",
	"ward-chat --assistant-worker":        "TestServiceFlags",
	"ward-chat --db":                      "testdata/script/chat.txtar",
	"ward-chat --forget-journal":          "TestServiceFlags",
	"ward-chat --no-forget-journal":       "TestServiceFlags",
	"ward-chat --keyring":                 "testdata/script/chat.txtar",
	"ward-chat --kms":                     "testdata/script/chat.txtar",
	"ward-chat --listen":                  "TestListen",
	"ward-chat --master-key-file":         "testdata/script/chat.txtar",
	"ward-chat --origin":                  "TestServiceFlags",
	"ward-chat --recovery":                "TestServiceFlags",
	"ward-chat --trusted-proxy":           "TestServiceFlags",
	"ward-chat serve --listen":            "TestListen",
}

// TestFlagTable: every flag of ward-chat has an entry in flagTests naming
// a test with a line that sets it, and every entry names a flag that
// exists.
func TestFlagTable(t *testing.T) {
	clitest.FlagTable(t, newRoot(&options{}, io.Discard), flagTests, ".")
}

// TestServiceFlags: the flags that configure the service reach its
// configuration (package chat's tests show what each setting does).
func TestServiceFlags(t *testing.T) {
	t.Setenv(local.EnvVar, local.Generate().Encode())
	parse := func(args ...string) chat.Config {
		t.Helper()
		var o options
		root := newRoot(&o, io.Discard)
		if err := root.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := o.config(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	def := parse()
	if def.AllowUnpepperedHashes || def.Recovery || def.Origins != nil || def.TrustedProxies != nil {
		t.Fatalf("defaults: %+v", def)
	}
	cfg := parse("--allow-unpeppered-hashes", "--recovery", "--origin", "https://chat.example.com", "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "fd00::/8")
	if !cfg.AllowUnpepperedHashes || !cfg.Recovery || !slices.Equal(cfg.Origins, []string{"https://chat.example.com"}) ||
		len(cfg.TrustedProxies) != 2 || cfg.TrustedProxies[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Fatalf("with every flag: %+v", cfg)
	}
	if cfg := parse("--assistant-worker", "python3 worker/assistant.py"); !slices.Equal(cfg.AssistantWorker, []string{"python3", "worker/assistant.py"}) || len(def.AssistantWorker) != 0 {
		t.Fatalf("--assistant-worker: %q, default %q", cfg.AssistantWorker, def.AssistantWorker)
	}
	// A forget journal by default: beside the keyring file, named after it.
	if cfg := parse("--forget-journal", "/var/lib/ward/forgets"); cfg.ForgetJournal != "/var/lib/ward/forgets" || def.ForgetJournal != "chat-keyring.forget-journal" {
		t.Fatalf("--forget-journal: %q, default %q", cfg.ForgetJournal, def.ForgetJournal)
	}
	if cfg := parse("--keyring", "/etc/ward/kr.json"); cfg.ForgetJournal != "/etc/ward/kr.forget-journal" {
		t.Fatalf("the default beside --keyring: %q", cfg.ForgetJournal)
	}
	if cfg := parse("--no-forget-journal"); cfg.ForgetJournal != "" {
		t.Fatalf("--no-forget-journal: %q", cfg.ForgetJournal)
	}
	t.Setenv("WARD_FORGET_JOURNAL", "/srv/forgets")
	if cfg := parse(); cfg.ForgetJournal != "/srv/forgets" {
		t.Fatalf("WARD_FORGET_JOURNAL: %q", cfg.ForgetJournal)
	}
	var o options
	root := newRoot(&o, io.Discard)
	root.ParseFlags([]string{"--trusted-proxy", "10.0.0.1"})
	if _, err := o.config(context.Background()); err == nil || !strings.Contains(err.Error(), "--trusted-proxy") {
		t.Fatalf("--trusted-proxy without a prefix length: %v", err)
	}
}

// TestListen: 'ward-chat serve --listen' and 'ward-chat --listen' serve on
// the address given (the default is 127.0.0.1:8080).
func TestListen(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(local.EnvVar, local.Generate().Encode())
	db, kr := "sqlite:"+filepath.Join(dir, "chat.db"), filepath.Join(dir, "kr.json")
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"init", "--db", db, "--keyring", kr}, io.Discard, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	for _, args := range [][]string{
		{"serve", "--db", db, "--keyring", kr, "--listen", "127.0.0.1:0"},
		{"--db", db, "--keyring", kr, "--listen", "127.0.0.1:0"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		r, w := io.Pipe()
		done := make(chan int, 1)
		go func() { done <- run(ctx, args, w, io.Discard); w.Close() }()
		line, _ := bufio.NewReader(r).ReadString('\n')
		addr, ok := strings.CutPrefix(line, "ward chat on http://")
		if !ok || strings.HasPrefix(addr, "127.0.0.1:8080") {
			t.Fatalf("%v: %q", args, line)
		}
		go io.Copy(io.Discard, r)
		resp, err := http.Get("http://" + strings.Fields(addr)[0])
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v: GET /: %v %v", args, resp, err)
		}
		resp.Body.Close()
		cancel()
		<-done
	}
}

// TestSIGTERM: ward-chat stopped with SIGTERM (systemd, Docker,
// Kubernetes) exits 0 and leaves the fleet, so that no "running" ghost
// holds the next rotation back. It also reads WARD_DB and WARD_KEYRING,
// as ward does.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ward-chat binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ward-chat")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mk := local.Generate()
	env := append(os.Environ(), local.EnvVar+"="+mk.Encode(), "WARD_DB=sqlite:"+filepath.Join(dir, "app.db"), "WARD_KEYRING="+filepath.Join(dir, "kr.json"))
	init := exec.Command(bin, "init")
	init.Env = env
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
	serve.Env = env
	stdout, _ := serve.StdoutPipe()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "ward chat on http://") {
		serve.Process.Kill()
		t.Fatalf("serve: %q", line)
	}
	go io.Copy(io.Discard, stdout)
	serve.Process.Signal(syscall.SIGTERM)
	if err := serve.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	ctx := context.Background()
	kr, err := keyring.Load(ctx, filepath.Join(dir, "kr.json"), mk)
	if err != nil {
		t.Fatal(err)
	}
	db, driver, err := dburl.Open("sqlite:" + filepath.Join(dir, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, _ := field.ParseDialect(driver)
	ps, err := (&fleet.Registry{DB: db, Dialect: d}).List(ctx, kr)
	if err != nil || len(ps) != 1 || !ps[0].Exited {
		t.Fatalf("the registry after SIGTERM: %+v %v", ps, err)
	}
}

// TestConsoleMetrics: ward-chat with OTEL_METRICS_EXPORTER=console prints
// ward.* metrics when it stops: the seals of a sign-up and the key
// service's latency (the keyring file unwrapped at start).
func TestConsoleMetrics(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(local.EnvVar, local.Generate().Encode())
	db, kr := "sqlite:"+filepath.Join(dir, "chat.db"), filepath.Join(dir, "kr.json")
	if code := run(context.Background(), []string{"init", "--db", db, "--keyring", kr}, io.Discard, io.Discard); code != 0 {
		t.Fatal("init failed")
	}
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--db", db, "--keyring", kr, "--listen", "127.0.0.1:0"}, w, io.Discard)
		w.Close()
	}()
	br := bufio.NewReader(r)
	line, _ := br.ReadString('\n')
	addr, ok := strings.CutPrefix(line, "ward chat on http://")
	if !ok {
		t.Fatalf("serve: %q", line)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, br); close(copied) }()
	resp, err := http.Post("http://"+strings.Fields(addr)[0]+"/api/signup", "application/json", strings.NewReader(`{"email":"otel@example.com","password":"correct horse battery"}`))
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("sign-up: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	<-copied
	for _, want := range []string{`"ward.value.operations"`, `"Value":"seal"`, `"ward.kms.call.duration"`, `"ward.password.duration"`} {
		if !strings.Contains(rest.String(), want) {
			t.Errorf("the console output lacks %s: %.600s", want, rest.String())
		}
	}
}
