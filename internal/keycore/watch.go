package keycore

import (
	"context"
	"errors"
	"time"
)

// A fleet of processes shares one keyring file (or copies of it that an
// operator distributes). A rotation is saved by one process (or the CLI);
// the others must load the new key before any value under it reaches them.
// Two mechanisms make that happen without a restart or a signal:
//
//   - Watch re-reads the file every interval, so that a key added as
//     decrypt-only is loaded everywhere before it is promoted;
//   - a keyring loaded from a file that meets a ciphertext under a key ID
//     it does not hold re-reads the file before failing if, and only if,
//     the file changed since this process last read or wrote it, so that a
//     value written by a process that already promoted a new key opens
//     here too. The condition matters: a database writer can plant values
//     under made-up key IDs, which then cost a stat of the file each and
//     no re-read, and cannot spend a re-read a genuine new key needs (a
//     once-a-second budget, before, could be spent by one planted value
//     just before a rotation, failing every value under the new key for
//     up to a second).

// failedReloadWait is the least time between a re-read for an unknown key
// ID that failed (a KMS that did not answer, an older file put in place)
// and the next one.
const failedReloadWait = time.Second

// reloadTimeout bounds a re-read caused by an unknown key ID (it may
// unwrap the file through a KMS).
const reloadTimeout = 5 * time.Second

// Watch re-reads the keyring's file every interval until ctx ends, and
// publishes a newer generation (see Reload). onError, if not nil, receives
// each failed re-read (a file of another keyring, an older copy, an
// unreachable KMS); the keyring in memory is then left as it was. It
// returns at once, with an error only for a keyring without a file.
func (kr *Keyring) Watch(ctx context.Context, interval time.Duration, onError func(error)) error {
	if kr.file == nil {
		return errors.New("keyring: Watch needs a keyring loaded from a file")
	}
	if interval <= 0 {
		return errors.New("keyring: Watch needs a positive interval")
	}
	kr.watchEvery.Store(int64(interval))
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := kr.Reload(ctx); err != nil && onError != nil && ctx.Err() == nil {
					onError(err)
				}
			}
		}
	}()
	return nil
}

// reloadForUnknown is called after a ciphertext named a key ID (or a
// record an epoch) the keyring does not hold: it re-reads the file if the
// file changed since this process last read or wrote it (another inode, a
// size or modification time of its own), and costs one stat otherwise.
// Callers that meet an unknown ID while a re-read is in flight wait for
// it. It reports whether the keyring in memory now holds what the file
// holds.
func (kr *Keyring) reloadForUnknown() bool {
	if kr.file == nil {
		return false
	}
	kr.unknownMu.Lock()
	if wait := kr.unknownWait; wait != nil {
		kr.unknownMu.Unlock()
		<-wait
		return true
	}
	if !kr.file.changed() {
		kr.unknownMu.Unlock()
		return true
	}
	if time.Now().UnixNano()-kr.lastFailedReload.Load() < int64(failedReloadWait) {
		kr.unknownMu.Unlock()
		return false
	}
	wait := make(chan struct{})
	kr.unknownWait = wait
	kr.unknownMu.Unlock()
	defer func() {
		kr.unknownMu.Lock()
		kr.unknownWait = nil
		kr.unknownMu.Unlock()
		close(wait)
	}()
	kr.unknownReloads.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	if err := kr.Reload(ctx); err != nil {
		kr.lastFailedReload.Store(time.Now().UnixNano())
		return false
	}
	return true
}

// unknownKeyHint says what an unknown key ID means for this keyring.
func (kr *Keyring) unknownKeyHint(reloaded bool) string {
	switch {
	case kr.file == nil:
		return ""
	case reloaded:
		return "not in " + kr.file.path + " either: the key was added to another copy of the file, or the value is not this keyring's"
	case kr.watchEvery.Load() > 0:
		return "this process has not loaded that key: it re-reads " + kr.file.path + " every " + time.Duration(kr.watchEvery.Load()).String() + ", or reload it now"
	default:
		return "this process has not loaded that key: reload it (Reload, SIGHUP) or watch the file (Watch)"
	}
}
