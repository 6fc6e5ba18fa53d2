package keycore

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
)

func TestAnchorSavedAndMonotonic(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	gen := kr.Generation()
	if err := kr.SetAnchor(ctx, "db-1", Anchor{Counter: 3, Epoch: kr.StateEpoch(), Marks: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if kr.Generation() != gen+1 {
		t.Fatalf("generation %d after an anchor write, want %d", kr.Generation(), gen+1)
	}
	if err := kr.SetAnchor(ctx, "db-1", Anchor{Counter: 4, Epoch: kr.StateEpoch(), Marks: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := back.Anchor("db-1")
	if !ok || a.Counter != 4 || !slices.Equal(a.Marks, []string{"a", "b"}) || !a.HasMark("a") || a.HasMark("c") {
		t.Fatalf("loaded anchor %+v %v", a, ok)
	}
	if got := back.Anchored(); !slices.Equal(got, []string{"db-1"}) {
		t.Fatalf("Anchored() = %v", got)
	}
	// Anchors only move forward.
	if err := back.SetAnchor(ctx, "db-1", Anchor{Counter: 3, Epoch: a.Epoch}); !errors.Is(err, ErrRollback) {
		t.Fatalf("lowering the counter: %v, want ErrRollback", err)
	}
	// Writing what is recorded writes nothing.
	g := back.Generation()
	if err := back.SetAnchor(ctx, "db-1", Anchor{Counter: 4, Epoch: a.Epoch, Marks: []string{"a"}}); err != nil || back.Generation() != g {
		t.Fatalf("no-op anchor write: %v, generation %d -> %d", err, g, back.Generation())
	}
	for _, bad := range []string{"", "has space", string(make([]byte, 65))} {
		if err := back.SetAnchor(ctx, bad, Anchor{}); err == nil {
			t.Fatalf("database ID %q accepted", bad)
		}
	}
}

// Another process that saved the file first does not lose an anchor: the
// write reloads and applies again.
func TestAnchorAfterAnotherWriter(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	other, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetAnchor(ctx, "db-a", Anchor{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if err := kr.SetAnchor(ctx, "db-b", Anchor{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Anchored(); !slices.Equal(got, []string{"db-a", "db-b"}) {
		t.Fatalf("Anchored() = %v, want both", got)
	}
}

// A copy of the keyring file from before a key change cannot verify, and so
// cannot forge, state MAC'd after it; the newer keyring verifies state
// MAC'd under every earlier state key.
func TestStateMACEpochs(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	oldCopy, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e1, m1 := kr.StateMAC([]byte("state one"))
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	e2, m2 := kr.StateMAC([]byte("state two"))
	if e2 <= e1 {
		t.Fatalf("epoch %d after a key change, was %d", e2, e1)
	}
	if err := kr.VerifyStateMAC(e1, []byte("state one"), m1); err != nil {
		t.Fatalf("newer keyring, older state: %v", err)
	}
	if err := kr.VerifyStateMAC(e2, []byte("state two"), m2); err != nil {
		t.Fatal(err)
	}
	if err := kr.VerifyStateMAC(e2, []byte("state 2"), m2); !errors.Is(err, ErrStateMAC) {
		t.Fatalf("altered state: %v, want ErrStateMAC", err)
	}
	if err := kr.VerifyStateMAC(e1, []byte("state two"), m2); !errors.Is(err, ErrStateMAC) {
		t.Fatalf("state under another epoch: %v, want ErrStateMAC", err)
	}
	old, err := Unmarshal(ctx, oldCopy, mk)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.VerifyStateMAC(e2, []byte("state two"), m2); !errors.Is(err, ErrUnknownEpoch) || !errors.Is(err, ErrRollback) {
		t.Fatalf("old file, newer state: %v, want ErrUnknownEpoch", err)
	}
	if e, m := old.StateMAC([]byte("forged")); kr.VerifyStateMAC(e, []byte("forged"), m) != nil || e >= e2 {
		t.Fatalf("the old file's MAC should verify only at its own older epoch %d (< %d)", e, e2)
	}
	// Another keyring's MAC never verifies.
	other, _ := New(AES256GCM)
	if e, m := other.StateMAC([]byte("state two")); kr.VerifyStateMAC(e, []byte("state two"), m) == nil {
		t.Fatal("another keyring's state MAC verified")
	}
}

// TestStateMACEpochZero: a MAC under epoch 0 — the root alone, which any
// copy of the keyring file ever written derives — verifies only in a
// keyring without state keys (a file from before them); every keyring
// made since has state keys, in memory too.
func TestStateMACEpochZero(t *testing.T) {
	kr, err := New(AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if kr.StateEpoch() == 0 {
		t.Fatal("a new keyring has no state key")
	}
	msg := []byte("ward ledger state v1\x00{}")
	forged := kr.stateMAC(0, nil, msg) // the root alone
	if err := kr.VerifyStateMAC(0, msg, forged); !errors.Is(err, ErrStateMAC) {
		t.Fatalf("an epoch-0 MAC in a keyring with state keys: %v, want ErrStateMAC", err)
	}
	// A file written before state keys keeps verifying its epoch-0 state.
	legacy, _ := New(AES256GCM)
	s := legacy.load().clone()
	s.stateKeys = nil
	legacy.snap.Store(s)
	if err := legacy.VerifyStateMAC(0, msg, legacy.stateMAC(0, nil, msg)); err != nil {
		t.Fatalf("epoch 0 in a keyring without state keys: %v", err)
	}
}
