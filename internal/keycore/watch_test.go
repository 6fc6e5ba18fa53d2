package keycore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReloadOnUnknownKey: a process that has not loaded a key another
// process added and promoted opens a value under it (one re-read of the
// file); values under made-up key IDs, as a database writer can plant,
// cause no re-read of a file that has not changed, and say what they mean.
func TestReloadOnUnknownKey(t *testing.T) {
	ctx := context.Background()
	path, mk, service := newFile(t)
	cli, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	id, err := cli.Rotate(ctx, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := cli.Seal([]byte("under the new key"), []byte("ctx"))
	pt, err := service.Open(ct, []byte("ctx"))
	if err != nil || string(pt) != "under the new key" || service.Primary().ID != id || service.unknownReloads.Load() != 1 {
		t.Fatalf("%q %v, primary %v, %d re-reads", pt, err, service.Primary().ID, service.unknownReloads.Load())
	}
	forged := bytes.Clone(ct)
	for i := range 100 {
		binary.BigEndian.PutUint32(forged[3:7], uint32(0xdead0000+i))
		_, err := service.Open(forged, []byte("ctx"))
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "this process has not loaded that key") && !strings.Contains(err.Error(), "not in") {
			t.Fatalf("forged key ID: %v", err)
		}
	}
	if n := service.unknownReloads.Load(); n != 1 {
		t.Fatalf("100 made-up key IDs caused %d re-reads of the file", n-1)
	}
}

// TestPlantedKeyIDSpendsNothing: a value under a made-up key ID, read just
// before a rotation (a database writer planted it), used to spend the
// once-a-second re-read, so that for up to a second after the rotation
// every genuine value under the new key failed with ErrUnknownKey and a
// "reload it" hint. The file has not changed, so it costs no re-read now,
// and the first value under the new key opens at once; the made-up ID's
// error says the file was read and does not hold it.
func TestPlantedKeyIDSpendsNothing(t *testing.T) {
	ctx := context.Background()
	path, mk, service := newFile(t)
	cli, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	planted, _ := cli.Seal([]byte("planted"), []byte("ctx"))
	binary.BigEndian.PutUint32(planted[3:7], 0xdeadbeef)
	_, err = service.Open(planted, []byte("ctx"))
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "not in "+path+" either") || service.unknownReloads.Load() != 0 {
		t.Fatalf("planted: %v, %d re-reads", err, service.unknownReloads.Load())
	}
	if _, err := cli.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	ct, _ := cli.Seal([]byte("under the new key"), []byte("ctx"))
	if pt, err := service.Open(ct, []byte("ctx")); err != nil || string(pt) != "under the new key" {
		t.Fatalf("the first value under the new key, right after a planted one: %q %v", pt, err)
	}
}

// TestConcurrentUnknownKey: 32 concurrent opens of a value under a key
// another copy of the file promoted all succeed with one re-read of the
// file: callers that meet the key while the re-read is in flight wait for
// it instead of failing (31 of 32 failed before).
func TestConcurrentUnknownKey(t *testing.T) {
	ctx := context.Background()
	path, mk, service := newFile(t)
	cli, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	ct, _ := cli.Seal([]byte("under the new key"), []byte("ctx"))
	var wg sync.WaitGroup
	var failed atomic.Int32
	start := make(chan struct{})
	for range 32 {
		wg.Go(func() {
			<-start
			if pt, err := service.Open(ct, []byte("ctx")); err != nil || string(pt) != "under the new key" {
				failed.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := failed.Load(); n != 0 || service.unknownReloads.Load() != 1 {
		t.Fatalf("%d of 32 concurrent opens failed, %d re-reads of the file", n, service.unknownReloads.Load())
	}
}

// TestWatch: a watching process loads a rotation saved by another within
// a few intervals, and keeps the old key for the values under it.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path, mk, service := newFile(t)
	old := service.Primary().ID
	oldCT, _ := service.Seal([]byte("old"), nil)
	if err := service.Watch(ctx, 20*time.Millisecond, func(err error) { t.Errorf("watch: %v", err) }); err != nil {
		t.Fatal(err)
	}
	cli, _ := Load(context.Background(), path, mk)
	id, err := cli.Rotate(context.Background(), AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for service.Primary().ID != id && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if service.Primary().ID != id {
		t.Fatal("the watching process did not load the rotation")
	}
	if _, err := service.Open(oldCT, nil); err != nil || old == id {
		t.Fatalf("the old key's value: %v", err)
	}
	if err := (&Keyring{}).Watch(ctx, time.Second, nil); err == nil {
		t.Fatal("Watch of a keyring without a file")
	}
}

// TestRetiredKeySaysSo: a value under a key the keyring removed for good
// fails with ErrUnknownKey saying the key was retired, not "reload it",
// and costs no re-read of the file.
func TestRetiredKeySaysSo(t *testing.T) {
	ctx := context.Background()
	_, _, kr := newFile(t)
	old := kr.Primary().ID
	ct, _ := kr.Seal([]byte("under the old key"), []byte("ctx"))
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	if err := kr.Remove(ctx, old); err != nil {
		t.Fatal(err)
	}
	_, err := kr.Open(ct, []byte("ctx"))
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "the key was retired") || strings.Contains(err.Error(), "reload it") || kr.unknownReloads.Load() != 0 {
		t.Fatalf("%v (%d re-reads)", err, kr.unknownReloads.Load())
	}
}
