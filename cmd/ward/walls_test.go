package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/wardlab/ward/internal/walls"
)

// TestLinksNoLab: the operator CLI, the binary that rotates production
// keys, links no package of the lab, the PQ protocols, the examples, test
// doubles, emulators, proxies, plotting or browsers.
func TestLinksNoLab(t *testing.T) {
	deps, err := walls.List(".", true, ".")
	if err != nil {
		t.Fatal(err)
	}
	if bad := walls.ForbiddenDeps(deps, walls.CLIForbidden); len(bad) > 0 {
		t.Fatalf("ward links %d forbidden packages: %v", len(bad), bad)
	}
}

// TestBinarySize builds the CLI as a user would and checks its size. It
// builds with -trimpath, so that the size is the code's and not the length
// of the paths the checkout and the module cache happen to have: without it
// the same commit measured 4 KiB under the wall here and over it on a CI
// machine with longer paths.
func TestBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ward binary")
	}
	bin := filepath.Join(t.TempDir(), "ward")
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ward: %.1f MiB", float64(st.Size())/(1<<20))
	if st.Size() > walls.MaxCLIMiB<<20 {
		t.Fatalf("ward is %.1f MiB, over %d MiB", float64(st.Size())/(1<<20), walls.MaxCLIMiB)
	}
}
