//go:build !unix

package keycore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

const lockTimeout = 30 * time.Second

// lock takes an exclusive lock by creating path + ".lock" exclusively and
// removing it on unlock. Unlike the flock used on Unix, a lock file left
// by a crashed writer must be removed by hand.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	name := path + ".lock"
	deadline := time.Now().Add(lockTimeout)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(name) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("keyring: lock file: %w", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s exists (remove it if no writer is running)", ErrLocked, name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
