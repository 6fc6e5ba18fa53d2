// Package killtest runs a test's child process and kills it with SIGKILL
// at a random moment after it has made progress, the scaffold of ward's
// kill -9 fault loops.
package killtest

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ProgressEnv names the variable that holds the file a child writes once
// it has done a first step (Progressed).
const ProgressEnv = "WARD_KILLTEST_PROGRESS"

// Progressed, called by a child after a step, lets its parent's KillAfter
// go on.
func Progressed() {
	os.WriteFile(os.Getenv(ProgressEnv), []byte("1"), 0o600)
}

// KillAfter starts the test binary's test run (a child test) with env
// added to the environment, waits until the child has called Progressed
// (at most 60 s), waits a random 0 to maxDelay more, and kills it with
// SIGKILL. what names the child's work in a failure.
func KillAfter(t testing.TB, run, what string, maxDelay time.Duration, env ...string) {
	t.Helper()
	progress := filepath.Join(t.TempDir(), "progress")
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$")
	cmd.Env = append(append(os.Environ(), ProgressEnv+"="+progress), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(progress); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: the child made no progress in 60 s: %s", what, out.String())
		}
	}
	time.Sleep(time.Duration(rand.Int64N(int64(maxDelay) + 1)))
	cmd.Process.Kill()
	cmd.Wait()
}
