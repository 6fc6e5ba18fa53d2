package password

import (
	"context"
	"strings"
	"testing"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// TestUpgradeWaitsForTheFleet: the bcrypt → peppered Argon2id step of a
// rolling deploy. While the fleet has not opened Argon2id, a new hash is
// the fallback's bcrypt, which a bcrypt-only process verifies, and a
// log-in upgrades nothing; a hash another process already wrote in
// Argon2id is never turned back. Once Argon2id opens but the pepper has
// not, hashes are Argon2id unpeppered; once both open, peppered, and old
// hashes upgrade on log-in.
func TestUpgradeWaitsForTheFleet(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	bcryptOnly := newHasher(t, Policy{Preferred: Params{Scheme: Bcrypt, Cost: 4}, Accept: []Scheme{Bcrypt}, AllowWeak: true})
	g := fleetgate.New()
	p := fast
	p.Pepper, p.Forms, p.Fallback = kr, g, Params{Scheme: Bcrypt, Cost: 4}
	h := newHasher(t, p)
	for _, f := range []fleetgate.Form{fleetgate.Password("argon2id"), fleetgate.Password("bcrypt"), fleetgate.Pepper} {
		if !strings.Contains(string(formsText(g.Declared())), string(f)) {
			t.Fatalf("the hasher declares %v, not %s", g.Declared(), f)
		}
	}
	old, _ := bcryptOnly.Hash(ctx, []byte("pw"))
	enc, err := h.Hash(ctx, []byte("pw"))
	if err != nil || !strings.HasPrefix(enc, "$2") {
		t.Fatalf("before Argon2id opens the hasher wrote %q (%v)", enc, err)
	}
	if _, err := bcryptOnly.Verify(ctx, []byte("pw"), enc); err != nil {
		t.Fatalf("a bcrypt-only process cannot verify it: %v", err)
	}
	if up, _, err := h.VerifyAndUpgrade(ctx, []byte("pw"), old); err != nil || up != "" {
		t.Fatalf("a log-in upgraded before Argon2id opened: %q %v", up, err)
	}
	newer, _ := newHasher(t, fast).Hash(ctx, []byte("pw"))
	if up, _, err := h.VerifyAndUpgrade(ctx, []byte("pw"), newer); err != nil || up != "" {
		t.Fatalf("an Argon2id hash was turned back: %q %v", up, err)
	}
	g.SetOpen([]fleetgate.Form{fleetgate.Password("argon2id")})
	if enc, _ := h.Hash(ctx, []byte("pw")); !strings.HasPrefix(enc, "$argon2id$") || strings.Contains(enc, "keyid=") {
		t.Fatalf("with Argon2id open and the pepper not: %q", enc)
	}
	g.SetOpen([]fleetgate.Form{fleetgate.Pepper})
	up, _, err := h.VerifyAndUpgrade(ctx, []byte("pw"), old)
	if err != nil || !strings.Contains(up, ",keyid=") {
		t.Fatalf("once both opened the log-in gave %q (%v)", up, err)
	}
	if _, err := NewHasher(Policy{Preferred: fast.Preferred, AllowWeak: true, Forms: fleetgate.New()}, nil); err == nil {
		t.Fatal("Forms without Fallback accepted")
	}
	if _, err := NewHasher(Policy{Preferred: fast.Preferred, AllowWeak: true, Forms: fleetgate.New(), Fallback: Params{Scheme: Bcrypt, Cost: 4}, Accept: []Scheme{Argon2id}}, nil); err == nil {
		t.Fatal("a Fallback the hasher does not accept")
	}
	if _, err := NewHasher(Policy{Preferred: OWASP(), Forms: fleetgate.New(), Fallback: Params{Scheme: Bcrypt, Cost: 4}}, nil); err == nil {
		t.Fatal("a weak Fallback accepted without AllowWeak")
	}
}

func formsText(fs []fleetgate.Form) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f) + ",")
	}
	return b.String()
}
