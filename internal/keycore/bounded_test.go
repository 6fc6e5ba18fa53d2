//go:build unix

package keycore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/kms/local"
)

// TestFilesThatAreNotFiles: a keyring or grant path that names a FIFO
// (which a plain open waits on for ever), /dev/zero or a folder, and a
// master key file that is one, are refused at once with a typed error
// naming what they are; none is read.
func TestFilesThatAreNotFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "kr.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	mk := local.Generate()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{fifo, zero, dir} {
			if _, err := Load(ctx, p, mk); !errors.Is(err, ErrCorruptKeyring) || !errors.Is(err, boundfile.ErrNotRegular) {
				t.Errorf("keyring %s: %v", p, err)
			}
			if _, err := LoadGrant(ctx, p, mk); !errors.Is(err, ErrCorruptKeyring) || !errors.Is(err, boundfile.ErrNotRegular) {
				t.Errorf("grant %s: %v", p, err)
			}
			if _, err := local.Load(p, nil); !errors.Is(err, boundfile.ErrNotRegular) {
				t.Errorf("master key %s: %v", p, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a read hung")
	}
}
