package awskms_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
)

// LocalKMSBinEnv names the path of the local-kms binary (built by .ci/run
// from the tool pinned in go.mod: go build github.com/nsmithuk/local-kms).
const LocalKMSBinEnv = "WARD_LOCAL_KMS_BIN"

// ec is the encryption context the tests seal under.
var ec = map[string]string{"tenant": "42", "purpose": "chat"}

// loopbackOnly reports whether this process sees no network interface but
// loopback, as inside `unshare -n`.
func loopbackOnly() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// TestLocalKMSProcess runs the real local-kms binary, seeded from
// testdata, kills it with SIGKILL mid-run and restarts it. local-kms
// listens on every interface, so the test runs only where loopback is the
// sole interface.
func TestLocalKMSProcess(t *testing.T) {
	bin := os.Getenv(LocalKMSBinEnv)
	if bin == "" {
		t.Skipf("%s is not set (.ci/run builds local-kms and sets it)", LocalKMSBinEnv)
	}
	if !loopbackOnly() {
		t.Skip("local-kms listens on all interfaces: run this test where only loopback exists (unshare -n, as .ci/run does)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	seed, _ := filepath.Abs("testdata/local-kms-seed.yaml")
	dataDir := t.TempDir()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "KMS_SEED_PATH="+seed, "KMS_DATA_PATH="+dataDir,
			"KMS_REGION=us-east-1", "KMS_ACCOUNT_ID=111122223333")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	ctx := context.Background()
	svc, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward-test", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port),
		Region: "us-east-1", Timeout: 500 * time.Millisecond, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ready := func() {
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, _, err := svc.Describe(ctx); err == nil {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("local-kms not ready: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	proc := start()
	defer func() { proc.Process.Kill(); proc.Wait() }()
	ready()

	env := kms.NewEnvelope(svc, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxMessages: 5}})
	ct, err := env.Seal(ctx, []byte("before the kill"), nil, ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	for range 4 {
		if _, err := env.Seal(ctx, []byte("cached"), nil, ec); err != nil {
			t.Fatalf("cached key after kill: %v", err)
		}
	}
	if _, err := env.Seal(ctx, []byte("limit"), nil, ec); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("past the limit while down: %v", err)
	}
	fresh := kms.NewEnvelope(svc, kms.EnvelopeOptions{})
	if _, err := fresh.Open(ctx, ct, nil, ec); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("uncached open while down: %v", err)
	}
	proc = start()
	ready()
	if pt, err := fresh.Open(ctx, ct, nil, ec); err != nil || string(pt) != "before the kill" {
		t.Fatalf("after restart: %q %v", pt, err)
	}
}
