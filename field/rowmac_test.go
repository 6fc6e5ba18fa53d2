package field

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestRowMACv2: a v2 MAC names the current epoch and binds its database;
// an altered value, another database, a copy of the keyring file from
// before the rotation (after the old key's retirement), and a v1 MAC once
// refused all fail; an older epoch verifies until its key is retired.
func TestRowMACv2(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	oldFile, _ := kr.Marshal(ctx, mk)
	cols := []string{"token_hash", "user_id", "expires"}
	m, err := NewRowMACFor(kr, "sessions", cols, RowMACOptions{Database: "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := m.Sum([]byte("th"), int64(7), int64(99))
	if err != nil || len(tag) != RowMACSizeV2 {
		t.Fatalf("a v2 MAC of %d bytes, %v", len(tag), err)
	}
	if e, ok := RowMACEpoch(tag); !ok || e != kr.Primary().ID {
		t.Fatalf("the MAC names epoch %v, want the primary %v", e, kr.Primary().ID)
	}
	if err := m.Verify(tag, []byte("th"), "7", int64(99)); err != nil {
		t.Fatalf("the same values (7 as text): %v", err)
	}
	saved := bytes.Clone(tag)
	if err := m.Verify(tag, []byte("th"), int64(8), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a session re-pointed to user 8: %v", err)
	}
	if !bytes.Equal(tag, saved) {
		t.Fatal("Verify changed the tag it was given")
	}
	other, _ := NewRowMACFor(kr, "sessions", cols, RowMACOptions{Database: "db-2"})
	if err := other.Verify(tag, []byte("th"), int64(7), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a row copied to another database: %v", err)
	}
	v1, _ := NewRowMAC(kr, "sessions", cols...)
	old1, _ := v1.Sum([]byte("th"), int64(7), int64(99))
	if err := m.Verify(old1, []byte("th"), int64(7), int64(99)); err != nil {
		t.Fatalf("a v1 MAC before it is refused: %v", err)
	}
	refusing, _ := NewRowMACFor(kr, "sessions", cols, RowMACOptions{Database: "db-1", RefuseV1: true})
	if err := refusing.Verify(old1, []byte("th"), int64(7), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a v1 MAC once refused: %v", err)
	}
	g := fleetgate.New()
	gated, _ := NewRowMACFor(kr, "sessions", cols, RowMACOptions{Database: "db-1", Gate: g})
	if tag, _ := gated.Sum([]byte("th"), int64(7), int64(99)); len(tag) != RowMACSize {
		t.Fatalf("a gate that has not opened integrity:v2 wrote a %d-byte MAC, want v1", len(tag))
	}
	g.SetMarks([]string{RowMACMovedMark("sessions")})
	if err := gated.Verify(old1, []byte("th"), int64(7), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a v1 MAC after the gate learned the move: %v", err)
	}

	// A rotation: the old epoch verifies, and a current one is written.
	old := kr.Primary().ID
	if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	if cur, err := m.Current(tag, []byte("th"), int64(7), int64(99)); err != nil || cur {
		t.Fatalf("a MAC of the old epoch after a rotation: current %v, %v", cur, err)
	}
	if err := keyring.NewManager(kr).Remove(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(tag, []byte("th"), int64(7), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a MAC of a retired key's epoch: %v", err)
	}
	// The holder of the old file forges a MAC for user 8: its epoch ended.
	oldKR, err := keyring.Unmarshal(ctx, oldFile, mk)
	if err != nil {
		t.Fatal(err)
	}
	forger, _ := NewRowMACFor(oldKR, "sessions", cols, RowMACOptions{Database: "db-1"})
	forged, _ := forger.Sum([]byte("th"), int64(8), int64(99))
	if err := m.Verify(forged, []byte("th"), int64(8), int64(99)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("a MAC forged with the old keyring file: %v", err)
	}
}
