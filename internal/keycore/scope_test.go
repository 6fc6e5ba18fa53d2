package keycore

import (
	"bytes"
	"context"
	"crypto/fips140"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// TestScopeRoundTrip: a v4 value of every algorithm and size opens under
// its scope and context; it is 39 (51) bytes longer than its plaintext;
// its header names version 4, class 1 and the primary key.
func TestScopeRoundTrip(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			kr := mustNew(t, alg)
			s := kr.Scope(FieldScope("notes", "title"))
			for _, size := range []int{0, 1, 64, 500, 4096} {
				pt := bytes.Repeat([]byte{'x'}, size)
				ct, err := s.Seal(pt, []byte("row 1"))
				if refusedInFIPS(t, alg, err) {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(ct) != size+Overhead(alg) || ct[0] != version4 || ct[1] != byte(classKeyring) {
					t.Fatalf("v4 value of %d bytes: %d bytes, header %x", size, len(ct), ct[:3])
				}
				h, err := parseHeader(ct)
				if err != nil || h.KeyID != kr.Primary().ID || h.Algorithm != alg {
					t.Fatalf("header %+v, %v", h, err)
				}
				got, err := s.Open(ct, []byte("row 1"))
				if err != nil || !bytes.Equal(got, pt) {
					t.Fatalf("Open = %q, %v", got, err)
				}
			}
		})
	}
}

// TestScopeSeparates: a v4 value opens under its own scope only — another
// scope's key, the keyring's generic Open (the empty scope), or another
// context gets ErrWrongContext; damage gets ErrAuthentication; a changed
// check byte, which is not authenticated, only changes that diagnosis.
func TestScopeSeparates(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	title, body := kr.Scope(FieldScope("notes", "title")), kr.Scope(FieldScope("notes", "body"))
	ct, err := title.Seal([]byte("hello"), []byte("row 1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := body.Open(ct, []byte("row 1")); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("another scope: %v", err)
	}
	if _, err := kr.Open(ct, []byte("row 1")); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("the empty scope: %v", err)
	}
	if _, err := title.Open(ct, []byte("row 2")); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("another row: %v", err)
	}
	bad := bytes.Clone(ct)
	bad[len(bad)-1] ^= 1
	if _, err := title.Open(bad, []byte("row 1")); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("damaged: %v", err)
	}
	if ok, err := title.ContextMatches(ct, []byte("row 1")); !ok || err != nil {
		t.Fatalf("ContextMatches of its own context: %v %v", ok, err)
	}
	if ok, _ := title.ContextMatches(ct, []byte("row 2")); ok {
		t.Fatal("ContextMatches of another row")
	}
	// The check is outside the associated data: changing it leaves the
	// value opening (it only steers the diagnosis of a failed open).
	bad = bytes.Clone(ct)
	bad[adHead] ^= 1
	if got, err := title.Open(bad, []byte("row 1")); err != nil || string(got) != "hello" {
		t.Fatalf("a changed check: %q %v", got, err)
	}
	// Every authenticated header byte is bound.
	for i := 1; i < adHead; i++ {
		bad = bytes.Clone(ct)
		bad[i] ^= 0x40
		if _, err := title.Open(bad, []byte("row 1")); err == nil {
			t.Fatalf("header byte %d changed, the value still opens", i)
		}
	}
	// A v3 value is not a scope's.
	if fips140.Enabled() {
		return // v3 is not sealed in the FIPS 140-3 mode
	}
	v3, _ := kr.Seal([]byte("hello"), []byte("row 1"))
	if _, err := title.Open(v3, []byte("row 1")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a v3 value under a scope: %v", err)
	}
}

// TestScopeKeyIsHKDF: the scoped key is HKDF-SHA-256 of the keyring key
// under the documented info (FORMAT.md), so another language derives it:
// a value sealed through a scope opens with a key derived by hand.
func TestScopeKeyIsHKDF(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	scope := FieldScope("notes", "title")
	if want := "ward/field/v4\x00\x05notes\x05title"; scope != want {
		t.Fatalf("FieldScope = %q, want %q", scope, want)
	}
	ct, _ := kr.Scope(scope).Seal([]byte("hi"), []byte("ctx"))
	p := kr.load().primary
	m, err := hkdf.Key(sha256.New, p.material, nil, "ward ciphertext v4 scope\x00"+scope, 32)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := newScopedKey(AES256GCM, p.head, m)
	if err != nil {
		t.Fatal(err)
	}
	adp, ad := pooledAD([]byte("ctx"))
	defer releaseAD(adp, ad)
	if got, err := sk.open(nil, ct, ad); err != nil || string(got) != "hi" {
		t.Fatalf("opened with the derived key: %q %v", got, err)
	}
}

// TestScopeRotation: after a rotation a scope seals under the new primary
// and still opens what the old key sealed; a disabled key's values do not
// open.
func TestScopeRotation(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	s := kr.Scope(FieldScope("t", "c"))
	old, _ := s.Seal([]byte("old"), nil)
	oldID := kr.Primary().ID
	id, err := kr.Rotate(context.Background(), AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := s.Seal([]byte("new"), nil)
	if h, _ := parseHeader(fresh); h.KeyID != id {
		t.Fatalf("sealed under %v, want the new primary %v", h.KeyID, id)
	}
	if got, err := s.Open(old, nil); err != nil || string(got) != "old" {
		t.Fatalf("old value: %q %v", got, err)
	}
	if err := kr.Disable(context.Background(), oldID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(old, nil); !errors.Is(err, ErrKeyDisabled) {
		t.Fatalf("a disabled key's value: %v", err)
	}
}

// TestScopeSubjectKeys: a subject key's v4 values open under the same
// scope and key only, and its generic AppendOpen opens the empty scope's.
func TestScopeSubjectKeys(t *testing.T) {
	sk, err := NewSubjectKey(AES256GCM, 7)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSubjectKey(AES256GCM, 7)
	scope := FieldScope("msgs", "body")
	adp, ad := pooledAD([]byte("row"))
	defer releaseAD(adp, ad)
	ct, err := sk.AppendSealScopedAD(nil, []byte("secret"), scope, ad)
	if err != nil || ct[0] != version4 || ct[1] != byte(classSubject) || !IsSubjectSealed(ct) {
		t.Fatalf("seal: %x %v", ct[:2], err)
	}
	if v, ok := SubjectKeyVersion(ct); !ok || v != 7 {
		t.Fatalf("version %d %v", v, ok)
	}
	if got, err := sk.AppendOpenScopedAD(nil, ct, scope, ad); err != nil || string(got) != "secret" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := sk.AppendOpenScopedAD(nil, ct, FieldScope("msgs", "title"), ad); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("another scope: %v", err)
	}
	if _, err := other.AppendOpenScopedAD(nil, ct, scope, ad); !errors.Is(err, ErrWrongContext) {
		t.Fatalf("another key of the same version: %v", err)
	}
	if _, err := sk.AppendOpenAD(nil, ct, ad); err == nil || !strings.Contains(err.Error(), "v4") {
		t.Fatalf("a v4 value through the v3 path: %v", err)
	}
	kr := mustNew(t, AES256GCM)
	kv, _ := kr.Scope(scope).Seal([]byte("x"), []byte("row"))
	if _, err := sk.AppendOpenScopedAD(nil, kv, scope, ad); !errors.Is(err, ErrSubjectKey) {
		t.Fatalf("a keyring key's value under a subject key: %v", err)
	}
}

// TestTextFormV4: the text form of a v4 value is "w4:" and decodes back.
func TestTextFormV4(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	ct, _ := kr.Scope("x").Seal([]byte("v"), nil)
	s := EncodeText(ct)
	if !strings.HasPrefix(s, "w4:") {
		t.Fatalf("text form %q", s)
	}
	if b, err := DecodeText(s); err != nil || !bytes.Equal(b, ct) {
		t.Fatalf("DecodeText: %v", err)
	}
	if _, err := DecodeText("w3:" + s[3:]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a prefix that disagrees with the version byte: %v", err)
	}
}
