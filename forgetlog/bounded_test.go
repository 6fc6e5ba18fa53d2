//go:build unix

package forgetlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/internal/boundfile"
)

// TestNothingInTheFolderHangs: a writer of the journal folder puts a
// *.wfj symlink to /dev/zero there, then a FIFO named *.wfj. Reading the
// journal (a recovery, an audit) and a store's check before it creates a
// key (Private) used to spin on the zeros for ever, holding the journal's
// lock, and would wait for ever on the FIFO; each now fails at once with
// an error naming the file and what it is. The deadline catches a hang.
func TestNothingInTheFolderHangs(t *testing.T) {
	ctx := context.Background()
	kr := newKeyring(t)
	dir := t.TempDir()
	j, err := Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append(ctx, Entry{Database: "db-1", Namespace: "users", Subject: "u1"}); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero"+Ext)
	fifo := filepath.Join(dir, "fifo"+Ext)
	for _, plant := range []func() error{
		func() error { return os.Symlink("/dev/zero", zero) },
		func() error { os.Remove(zero); return syscall.Mkfifo(fifo, 0o600) },
	} {
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := Read(kr, "db-1", dir); !errors.Is(err, boundfile.ErrNotRegular) {
				t.Errorf("Read: %v", err)
			}
			if _, err := j.Private("db-1", "users", "u2", v1Commitment); !errors.Is(err, boundfile.ErrNotRegular) {
				t.Errorf("Private: %v", err)
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("reading the journal hung")
		}
	}
	// The folder cleaned up, the journal reads again.
	os.Remove(fifo)
	if r, err := Read(kr, "db-1", dir); err != nil || r.Count("users") != 1 {
		t.Fatalf("after the clean-up: %v", err)
	}
}
