package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHandshakeTwoProcesses builds ward-pq, runs 'handshake serve' and
// 'handshake dial' as separate processes, and checks the pinned, signed
// handshake and a wrong pin.
func TestHandshakeTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ward-pq binary")
	}
	bin := filepath.Join(t.TempDir(), "ward-pq")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	serve := exec.Command(bin, "handshake", "serve", "--listen", "127.0.0.1:0", "--backend", "circl")
	stdout, _ := serve.StdoutPipe()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Kill(); serve.Wait() }()
	sc := bufio.NewScanner(stdout)
	var addr, fp string
	deadline := time.Now().Add(30 * time.Second)
	for (addr == "" || fp == "") && time.Now().Before(deadline) && sc.Scan() {
		line := sc.Text()
		if a, ok := strings.CutPrefix(line, "listening on "); ok {
			addr = strings.Fields(a)[0]
		}
		if f, ok := strings.CutPrefix(line, "mldsa65 fingerprint: "); ok {
			fp = f
		}
	}
	if addr == "" || fp == "" {
		t.Fatal("serve printed no address or fingerprint")
	}
	out, err := exec.Command(bin, "handshake", "dial", addr, "--suite", "mlkem768+mldsa65", "--pin", fp, "--runs", "5", "--json").Output()
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	var doc struct {
		Runs []struct {
			WireBytes       int     `json:"wire_bytes"`
			HandshakeTimeMs float64 `json:"handshake_time_ms"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Runs) != 5 || doc.Runs[0].WireBytes != 7646 || doc.Runs[0].HandshakeTimeMs <= 0 {
		t.Fatalf("dial output %s: %v", out, err)
	}
	bad := exec.Command(bin, "handshake", "dial", addr, "--suite", "mlkem768+mldsa65", "--pin", strings.Repeat("00", 32))
	if err := bad.Run(); err == nil || bad.ProcessState.ExitCode() != 1 {
		t.Fatalf("wrong pin: %v", err)
	}
}
