// Package boundfile opens the files ward reads that someone other than
// ward may have put in place — keyring and grant files, a master key file,
// forget-journal files — so that no file can hang a process or fill its
// memory: regular files only, opened without blocking (a FIFO, a device
// such as /dev/zero, a socket or a folder is refused at once, with the
// kind it is), and read up to a limit. A symbolic link is followed (a
// Kubernetes secret is one) to a regular file.
package boundfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular means a path names something other than a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge means a file is larger than the limit its reader sets.
var ErrTooLarge = errors.New("larger than ward reads")

// Error says which file and why.
type Error struct {
	Path string
	Mode fs.FileMode // the file's type bits, for ErrNotRegular
	Size int64       // the file's size, for ErrTooLarge
	Max  int64
	Err  error // ErrNotRegular or ErrTooLarge
}

func (e *Error) Error() string {
	if errors.Is(e.Err, ErrTooLarge) {
		return fmt.Sprintf("%s: %d bytes, %v (%d)", e.Path, e.Size, e.Err, e.Max)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Path, e.Err, kindOf(e.Mode))
}

// Unwrap returns ErrNotRegular or ErrTooLarge.
func (e *Error) Unwrap() error { return e.Err }

// kindOf names a file's type for a person.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "type " + m.Type().String()
}

// Open opens path for reading if it is a regular file (following
// symbolic links) of at most max bytes, without blocking on a FIFO, and
// returns it with its information. Anything else is an [*Error] matching
// [ErrNotRegular] or [ErrTooLarge]. A file that grows after Open is the
// reader's to bound (read at most the size Open saw).
func Open(path string, max int64) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &Error{Path: path, Mode: fi.Mode().Type(), Err: ErrNotRegular}
	}
	if fi.Size() > max {
		f.Close()
		return nil, nil, &Error{Path: path, Size: fi.Size(), Max: max, Err: ErrTooLarge}
	}
	return f, fi, nil
}

// Read returns the contents of the regular file path, refusing one larger
// than max bytes (an [*Error] matching [ErrTooLarge]), as [Open] refuses
// what is not a regular file. It reads at most max+1 bytes whatever the
// file does meanwhile.
func Read(path string, max int64) ([]byte, error) {
	f, _, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &Error{Path: path, Size: int64(len(data)), Max: max, Err: ErrTooLarge}
	}
	return data, nil
}
