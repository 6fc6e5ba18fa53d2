package walls

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// maxTrackedBytes is the most a tracked file outside testdata/ may weigh.
const maxTrackedBytes = 1 << 20

// TestNoBinariesTracked: git tracks no executable (an ELF, Mach-O or PE
// file, or any file with an execute bit that is not a script) and no file
// over 1 MiB outside testdata/: built binaries are never committed.
func TestNoBinariesTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-s").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if bad := UntrackableFiles(t, string(out)); len(bad) > 0 {
		t.Fatalf("tracked files that must not be: %v", bad)
	}
}

// UntrackableFiles returns the files of a git ls-files -s listing (paths
// relative to the repository's root, two folders up) that are built
// binaries or too large.
func UntrackableFiles(t *testing.T, listing string) []string {
	t.Helper()
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		mode, path, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if _, p, ok := strings.Cut(path, "\t"); ok {
			path = p
		}
		data, err := os.ReadFile("../../" + path)
		if err != nil {
			continue // deleted in the work tree
		}
		binary := bytes.HasPrefix(data, []byte("\x7fELF")) || bytes.HasPrefix(data, []byte("MZ")) ||
			bytes.HasPrefix(data, []byte{0xcf, 0xfa, 0xed, 0xfe}) || (mode == "100755" && !bytes.HasPrefix(data, []byte("#!")))
		large := len(data) > maxTrackedBytes && !strings.Contains("/"+path, "/testdata/")
		if binary || large {
			bad = append(bad, path)
		}
	}
	return bad
}

// TestUntrackableFilesCatches is the test of the test.
func TestUntrackableFilesCatches(t *testing.T) {
	dir := "../../internal/walls/testdata-hygiene-probe"
	os.MkdirAll(dir, 0o755)
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/elf", []byte("\x7fELF\x02\x01"), 0o644)
	os.WriteFile(dir+"/big", make([]byte, maxTrackedBytes+1), 0o644)
	os.WriteFile(dir+"/run", []byte("#!/bin/sh\n"), 0o755)
	p := "internal/walls/testdata-hygiene-probe/"
	listing := "100644 0 0\t" + p + "elf\n100644 0 0\t" + p + "big\n100755 0 0\t" + p + "run\n"
	got := UntrackableFiles(t, listing)
	if len(got) != 2 || !strings.HasSuffix(got[0], "elf") || !strings.HasSuffix(got[1], "big") {
		t.Fatalf("caught %v, want elf and big (a script is fine)", got)
	}
}
