//go:build unix

package keycore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockTimeout bounds how long a writer waits for another writer's lock
// when the context has no deadline.
const lockTimeout = 30 * time.Second

// lock takes an exclusive lock on path + ".lock", a file beside the keyring
// that is never renamed or removed, so that the lock survives the atomic
// rename of the keyring itself. Every ward program that writes a keyring
// takes it. The lock is released when the returned function is called, or
// by the kernel if the process dies.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keyring: lock file: %w", err)
	}
	deadline := time.Now().Add(lockTimeout)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("keyring: locking %s: %w", name, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("%w: %s is held by another writer", ErrLocked, name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
