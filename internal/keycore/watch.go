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
//     it does not hold re-reads the file once before failing, at most
//     once per reloadEvery, so that a value written by a process that
//     already promoted a new key opens here too. The bound matters: a
//     database writer can plant values under made-up key IDs.

// reloadEvery is the least time between two re-reads of the file caused by
// unknown key IDs.
const reloadEvery = time.Second

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

// reloadForUnknown re-reads the file after a ciphertext named a key ID
// this process does not hold, at most once per reloadEvery, and reports
// whether a re-read happened. Callers that meet unknown key IDs while a
// re-read is in flight wait for it instead of failing at once: after a
// rotation promoted a key this process missed, every concurrent request
// opens once the one re-read has loaded it.
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
	now := time.Now().UnixNano()
	if now-kr.lastUnknownReload.Load() < int64(reloadEvery) {
		kr.unknownMu.Unlock()
		return false
	}
	kr.lastUnknownReload.Store(now)
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
	return kr.Reload(ctx) == nil
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
