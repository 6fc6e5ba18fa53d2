//go:build unix

package boundfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRead: a regular file, and a symbolic link to one, are read; a file
// over the limit is refused with its size; a FIFO (which a plain open
// would wait on for ever), /dev/zero (which a plain read would read for
// ever), a link to it, and a folder are refused at once, naming what they
// are. The test's deadline catches a hang.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kr.json")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{file, link} {
			if b, err := Read(p, 10); err != nil || string(b) != "0123456789" {
				t.Errorf("%s: %q %v", p, b, err)
			}
		}
		var e *Error
		if _, err := Read(file, 9); !errors.Is(err, ErrTooLarge) || !errors.As(err, &e) || e.Size != 10 || e.Max != 9 {
			t.Errorf("over the limit: %v", err)
		}
		for p, want := range map[string]string{fifo: "a named pipe", zero: "a character device", dir: "a folder"} {
			_, err := Read(p, 1<<20)
			if !errors.Is(err, ErrNotRegular) || !errors.As(err, &e) || kindOf(e.Mode) != want {
				t.Errorf("%s: %v, want %s refused", p, err, want)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a read hung")
	}
}
