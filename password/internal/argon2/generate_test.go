package argon2

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestAssemblyCurrent regenerates g_amd64.s and its stubs with the avo
// generator in _asm and compares them with the committed files. It needs
// the generator's module (github.com/mmcloughlin/avo) in the module cache:
// .ci/run downloads it and sets WARD_CI, which makes any failure fatal;
// elsewhere the test skips only when the module cannot be fetched.
func TestAssemblyCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	dir := t.TempDir()
	asm, stubs := filepath.Join(dir, "g_amd64.s"), filepath.Join(dir, "g_amd64_stubs.go")
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "run", ".", "-out", asm, "-stubs", stubs, "-pkg", "argon2")
	cmd.Dir = "_asm"
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off") // its own module, outside the workspace
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("WARD_CI") == "" && moduleMissing(out) {
			t.Skipf("cannot fetch the generator's module here (.ci/run downloads it): %v\n%s", err, out)
		}
		t.Fatalf("the generator failed: %v\n%s", err, out)
	}
	for _, f := range []string{"g_amd64.s", "g_amd64_stubs.go"} {
		want, _ := os.ReadFile(filepath.Join(dir, f))
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The generator names its output paths in the header comment.
		want = bytes.ReplaceAll(want, []byte(dir+"/"), []byte("../"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what _asm generates: run go generate ./password/internal/argon2", f)
		}
	}
}

// moduleMissing reports whether go's output says a module could not be
// found or fetched (no network, no proxy), not that the generator broke.
func moduleMissing(out []byte) bool {
	for _, s := range []string{"no required module", "cannot find module", "module lookup disabled", "dial tcp", "missing go.sum entry", "GOPROXY"} {
		if bytes.Contains(out, []byte(s)) {
			return true
		}
	}
	return false
}
