package keycore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/kms"
)

// maxKeyringFile caps how much Load reads.
const maxKeyringFile = 16 << 20

// file is where a keyring loaded with Load or made with Create lives.
type file struct {
	path string
	mu   sync.Mutex // guards ks and sum
	ks   kms.KeyService
	sum  [32]byte // SHA-256 of the bytes last read or written
	// seen is the file's information when this process last read it
	// (taken before the read) or wrote it: a re-read for an unknown key
	// ID happens only once it differs (reloadForUnknown).
	seen atomic.Pointer[fs.FileInfo]
}

// stat returns the information of the file at path, or nil.
func stat(path string) *fs.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return &fi
}

// changed reports whether the file differs from what this process last
// read or wrote: another file renamed over it, or another size or
// modification time. A file that cannot be stat'ed has not changed (there
// is nothing to re-read).
func (f *file) changed() bool {
	now, prev := stat(f.path), f.seen.Load()
	if now == nil {
		return false
	}
	if prev == nil {
		return true
	}
	a, b := *now, *prev
	return !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime())
}

// Path returns the file a keyring was loaded from or created in, or ""
// for a keyring that lives in memory.
func (kr *Keyring) Path() string {
	if kr.file == nil {
		return ""
	}
	return kr.file.path
}

// Create makes a new keyring file at path with one primary key of alg,
// sealed under ks, and returns the keyring, which saves its changes there.
// It fails (with an error matching fs.ErrExist) if the file exists: it
// never replaces keys.
func Create(ctx context.Context, path string, ks kms.KeyService, alg Algorithm) (*Keyring, error) {
	kr, err := New(alg)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("keyring: creating %s: %w", path, fs.ErrExist)
	}
	// Sealed before anything touches the folder: a key service that fails
	// (no credentials, wrong key) leaves nothing behind, not even a lock
	// file.
	data, err := kr.marshal(ctx, kr.load(), ks)
	if err != nil {
		return nil, err
	}
	unlock, err := lock(ctx, path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Lstat(path); err == nil { // created meanwhile
		return nil, fmt.Errorf("keyring: creating %s: %w", path, fs.ErrExist)
	}
	data = append(data, '\n')
	if err := writeAtomic(path, data); err != nil {
		return nil, err
	}
	kr.file = &file{path: path, ks: ks, sum: sha256.Sum256(data)}
	kr.file.seen.Store(stat(path)) // under the lock: what was written
	return kr, nil
}

// Load opens the keyring file at path, sealed under ks. The keyring saves
// its changes back to the file. A missing file is an error (matching
// fs.ErrNotExist), never a new keyring: create one with [Create].
func Load(ctx context.Context, path string, ks kms.KeyService) (*Keyring, error) {
	seen := stat(path) // before the read: a change after it is a change
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	kr, _, err := unmarshal(ctx, data, ks)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	kr.file = &file{path: path, ks: ks, sum: sha256.Sum256(data)}
	kr.file.seen.Store(seen)
	return kr, nil
}

// readFile reads a keyring file: a regular file (a FIFO or a device is
// refused at once, never read), of at most maxKeyringFile bytes.
func readFile(path string) ([]byte, error) { return readBounded(path, maxKeyringFile, "") }

// readBounded reads a keyring or grant file (what names it in errors) of
// at most max bytes: one that is too large or not a regular file is
// ErrCorruptKeyring.
func readBounded(path string, max int64, what string) ([]byte, error) {
	data, err := boundfile.Read(path, max)
	if errors.Is(err, boundfile.ErrTooLarge) || errors.Is(err, boundfile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s%w", ErrCorruptKeyring, what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: %s%w", what, err)
	}
	return data, nil
}

// Reload reads the keyring's file again and publishes its keys, for a
// process that must pick up a change another process saved (a rotation by
// the CLI, a copy distributed from another host). It refuses a file of an
// older generation than the one in memory ([ErrRollback]) and a file of
// another keyring.
func (kr *Keyring) Reload(ctx context.Context) error {
	_, err := kr.reload(ctx, nil)
	return err
}

// reload is Reload, publishing the file's newer snapshot only if accept
// (nil: any) takes it; it reports whether the keyring now holds what the
// file holds.
func (kr *Keyring) reload(ctx context.Context, accept func(*snapshot) bool) (bool, error) {
	if kr.file == nil {
		return false, errors.New("keyring: Reload needs a keyring loaded from a file")
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	f := kr.file
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := stat(f.path)
	data, err := readFile(f.path)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	if sum == f.sum {
		f.seen.Store(seen) // read: an unknown key ID re-reads it once it changes again
		return true, nil
	}
	other, _, err := unmarshal(ctx, data, f.ks)
	if err != nil {
		return false, fmt.Errorf("%w (file %s)", err, f.path)
	}
	defer other.destroyRoot()
	if other.id != kr.id {
		return false, fmt.Errorf("%w: %s holds keyring %s, this process has %s", ErrWrongKeyring, f.path, other.id, kr.id)
	}
	s := other.load()
	if have := kr.load().generation; s.generation <= have {
		return false, &RollbackError{Path: f.path, Generation: s.generation, Seen: have}
	}
	if accept != nil && !accept(s) {
		return false, nil
	}
	kr.publish(s)
	f.sum = sum
	f.seen.Store(seen)
	return true, nil
}

// retryStale runs once until it succeeds or fails other than with a
// [*StaleError] (another process saved the file first), at most
// maxAnchorAttempts times: after each stale round it reloads the file,
// keeping only what accept (nil: anything) takes, and gives up with the
// stale error if accept refuses.
func (kr *Keyring) retryStale(ctx context.Context, once func() error, accept func(*snapshot) bool) error {
	err := once()
	for range maxAnchorAttempts - 1 {
		var stale *StaleError
		if !errors.As(err, &stale) || kr.file == nil {
			break
		}
		ok, rerr := kr.reload(ctx, accept)
		if rerr != nil {
			return errors.Join(err, rerr)
		}
		if !ok {
			return err
		}
		err = once()
	}
	return err
}

func (kr *Keyring) destroyRoot() { clear(kr.root[:]) }

// Rewrap seals the keyring's file under another key service (a new master
// key, or KMS key rotation) without touching the data keys. Later changes
// are saved under to.
func (kr *Keyring) Rewrap(ctx context.Context, to kms.KeyService) error {
	if kr.file == nil {
		return errors.New("keyring: Rewrap needs a keyring loaded from a file")
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	next := kr.load().clone()
	next.generation++
	if err := kr.file.save(ctx, kr, next, to); err != nil {
		return err
	}
	kr.publish(next)
	return nil
}

// save writes next to the file under ks, if the file still holds exactly
// what this process last read or wrote: under an exclusive lock (a lock
// file beside the keyring, which survives the rename), then write, fsync,
// rename and fsync of the directory.
func (f *file) save(ctx context.Context, kr *Keyring, next *snapshot, ks kms.KeyService) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := lock(ctx, f.path)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readFile(f.path)
	if err != nil {
		return &StaleError{Path: f.path, Err: err}
	}
	if sha256.Sum256(cur) != f.sum {
		return &StaleError{Path: f.path}
	}
	data, err := kr.marshal(ctx, next, ks)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := writeAtomic(f.path, data); err != nil {
		return err
	}
	f.sum = sha256.Sum256(data)
	f.seen.Store(stat(f.path)) // under the lock: what was written
	f.ks = ks
	return nil
}

// writeAtomic writes data to a temporary file beside path (mode 0600),
// syncs it, renames it over path and syncs the directory, so that after a
// crash path holds either the old or the new content, never a mix.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	t, err := os.CreateTemp(dir, ".keyring-*")
	if err != nil {
		return fmt.Errorf("keyring: saving: %w", err)
	}
	defer os.Remove(t.Name())
	_, err = t.Write(data)
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(t.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("keyring: saving %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("keyring: syncing %s: %w", dir, err)
		}
	}
	return nil
}
