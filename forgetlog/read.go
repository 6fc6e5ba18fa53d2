package forgetlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/keyring"
)

// Read reads every journal file in the folders given and returns the
// valid records of database.
func Read(kr *keyring.Keyring, database string, dirs ...string) (*Records, error) {
	ks, err := keys(kr)
	if err != nil {
		return nil, err
	}
	r := newRecords(ks)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("forgetlog: %s is not a journal folder: %w", dir, cmpErr(err))
		}
		files, err := filepath.Glob(filepath.Join(dir, "*"+Ext))
		if err != nil {
			return nil, fmt.Errorf("forgetlog: %w", err)
		}
		for _, name := range files {
			if err := r.readFile(name, database); err != nil {
				return nil, err
			}
			r.Files++
		}
	}
	return r, nil
}

// MaxFile bounds a journal file: a process's file holds a record of about
// 200 bytes per forget, so 1 GiB is some five million forgets. A larger
// file, or anything but a regular file where a journal file should be (a
// FIFO, a device such as /dev/zero, a folder named *.wfj), is refused with
// an error naming it, at once: a writer of the folder cannot make a read
// hang or fill memory.
const MaxFile = 1 << 30

// openJournalFile opens a journal file for reading, refusing what
// MaxFile's comment says. A file is read only up to the size it had when
// opened.
func openJournalFile(name string) (*os.File, fs.FileInfo, error) {
	f, fi, err := boundfile.Open(name, MaxFile)
	if err != nil {
		return nil, nil, fmt.Errorf("forgetlog: %w", err)
	}
	return f, fi, nil
}

func cmpErr(err error) error {
	if err == nil {
		return errors.New("not a folder")
	}
	return err
}

func (r *Records) readFile(name string, database string) error {
	f, fi, err := openJournalFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.readLines(io.LimitReader(f, fi.Size()), database); err != nil {
		return fmt.Errorf("forgetlog: reading %s: %w", name, err)
	}
	return nil
}

// readLines reads records from in, one per line, each at most maxLine
// bytes: a longer line is counted invalid and skipped.
func (r *Records) readLines(in io.Reader, database string) error {
	br := bufio.NewReaderSize(in, maxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.Invalid++
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of an overlong line
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if len(line) > 0 {
			r.add(line, database, err == nil)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// add parses one line; complete is false for a last line without its
// newline (a crash mid-write), which is invalid.

// live is a journal's index of the records every process has appended so
// far, read incrementally (each file from where the last read stopped).
type live struct {
	mu       sync.Mutex
	database string
	records  *Records
	offsets  map[string]int64
}

// refresh reads what was appended to the journal since the last call.
func (j *Journal) refresh(database string) error {
	l := &j.live
	if l.records == nil || l.database != database {
		l.records, l.offsets, l.database = newRecords(j.keySet), map[string]int64{}, database
	}
	files, err := filepath.Glob(filepath.Join(j.dir, "*"+Ext))
	if err != nil {
		return fmt.Errorf("forgetlog: %w", err)
	}
	for _, name := range files {
		if err := l.readFrom(name); err != nil {
			return err
		}
	}
	return nil
}

// readFrom reads a file's complete lines after the offset last read.
func (l *live) readFrom(name string) error {
	f, fi, err := openJournalFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	off := l.offsets[name]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("forgetlog: %w", err)
	}
	br := bufio.NewReaderSize(io.LimitReader(f, max(0, fi.Size()-off)), maxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // an overlong line: a writer's, skipped
			l.records.Invalid++
			off += int64(len(line))
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				off += int64(len(line))
			}
			if err == nil {
				continue
			}
		}
		if err != nil { // EOF: a last line without its newline is read again next time
			l.offsets[name] = off
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("forgetlog: reading %s: %w", name, err)
		}
		l.records.add(line, l.database, true)
		off += int64(len(line))
	}
}
