package password

import (
	"context"
	"crypto/fips140"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
)

// TestTotalWorkBounded: hashes whose parameters are each within their
// caps but whose product is not are refused before any work; every preset
// ward offers is admitted.
func TestTotalWorkBounded(t *testing.T) {
	h := newHasher(t, Policy{})
	ctx := context.Background()
	salt, out := "c2FsdHNhbHRzYWx0MTIzNA", "+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0"
	for _, tc := range []struct{ hash, param string }{
		{"$argon2id$v=19$m=131072,t=16,p=1$" + salt + "$" + out, "m·t (KiB·passes)"},
		{"$argon2id$v=19$m=262144,t=1,p=1$" + salt + "$" + out, "m"},
		{"$scrypt$ln=17,r=8,p=16$" + salt + "$" + out, "N·r·p"},
		{"$scrypt$ln=20,r=8,p=1$" + salt + "$" + out, "memory (128·N·r)"},
		{"$pbkdf2-sha256$i=1500000,l=64$" + salt + "$" + strings.Repeat("A", 86), "iterations × output blocks"},
		{"$2b$14$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgswR2", "cost"},
		{"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$AAE", "hash length"},
	} {
		_, err := h.Verify(ctx, []byte("x"), tc.hash)
		var le *LimitError
		if !errors.As(err, &le) || le.Param != tc.param {
			t.Errorf("%s: %v", tc.hash[:24], err)
		}
	}
	for _, p := range []Params{OWASP(), SpringV58(), Strong(), Bcrypt12(), Scrypt17(), PBKDF2SHA256OWASP()} {
		if err := DefaultLimits().check(withDefaultLengths(p)); err != nil {
			t.Errorf("preset %v refused: %v", p, err)
		}
	}
	if h.Limiter().Stats().Admitted != 0 {
		t.Fatal("a refused hash was admitted")
	}
}

func withDefaultLengths(p Params) Params {
	if p.KeyLen == 0 {
		p.KeyLen = 32
	}
	return p
}

// TestRequirePepper: with RequirePepper, an unpeppered hash of a known
// password (planted by a database writer) does not verify.
func TestRequirePepper(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	plain, _ := newHasher(t, fast).Hash(ctx, []byte("attacker's password"))
	p := fast
	p.Pepper, p.RequirePepper = kr, true
	h := newHasher(t, p)
	if _, err := h.Verify(ctx, []byte("attacker's password"), plain); !errors.Is(err, ErrPepper) {
		t.Fatalf("unpeppered hash under RequirePepper: %v", err)
	}
	own, _ := h.Hash(ctx, []byte("pw"))
	if _, err := h.Verify(ctx, []byte("pw"), own); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHasher(Policy{RequirePepper: true}, nil); err == nil {
		t.Fatal("RequirePepper without a keyring accepted")
	}
}

// TestLanesChargedAsSlots: a p=4 hash on a 2-slot limiter takes both slots
// (and is admitted, not starved), and blocks a p=1 hash meanwhile.
func TestLanesChargedAsSlots(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(LimiterConfig{MaxInFlight: 2, MemoryBudget: 1 << 30})
	wide := newHasherWith(t, Policy{Preferred: Params{Scheme: Argon2id, Memory: 4096, Time: 1, Parallelism: 4}, AllowWeak: true}, l)
	narrow := newHasherWith(t, fast, l)
	ls, err := l.acquire(ctx, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.InFlight != 2 {
		t.Fatalf("a 4-lane hash took %d slots of 2", st.InFlight)
	}
	done := make(chan error)
	go func() { _, err := narrow.Hash(ctx, []byte("pw")); done <- err }()
	select {
	case <-done:
		t.Fatal("a 1-lane hash ran while the 4-lane hash held both slots")
	case <-time.After(50 * time.Millisecond):
	}
	ls.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := wide.Hash(ctx, []byte("pw")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func newHasherWith(t testing.TB, p Policy, l *Limiter) *Hasher {
	t.Helper()
	h, err := NewHasher(p, l)
	refusedInFIPS(t, p, err)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// refusedInFIPS: in the FIPS 140-3 mode (GODEBUG=fips140=only in
// .ci/run) a policy that writes a scheme the mode does not approve is
// refused; the test asserts that refusal and stops (SECURITY.md lists the
// tests that do). The default run covers what they test.
func refusedInFIPS(t testing.TB, p Policy, err error) {
	t.Helper()
	ok := func(s Scheme) bool { return s == SchemeUnknown || approved(s) == nil }
	if !fips140.Enabled() || ok(p.Preferred.Scheme) && ok(p.Fallback.Scheme) {
		return
	}
	if !errors.Is(err, ErrNotApproved) {
		t.Fatalf("%v in the FIPS 140-3 mode: %v, want ErrNotApproved", p.Preferred.Scheme, err)
	}
	t.Skipf("FIPS 140-3 mode: %v refused, as it must be", p.Preferred.Scheme)
}

// TestMemoryReuse: the block memory of one hash is reused by the next,
// zeroed in between, bounded by the budget, and released when idle.
func TestMemoryReuse(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(LimiterConfig{MaxInFlight: 1, MemoryBudget: 8 << 20, IdleRelease: 100 * time.Millisecond})
	h := newHasherWith(t, Policy{Preferred: Params{Scheme: Argon2id, Memory: 2048, Time: 1, Parallelism: 1}, AllowWeak: true}, l)
	for range 5 {
		if _, err := h.Hash(ctx, []byte("pw")); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	if st.Allocated != 1 || st.Reused != 4 || st.PooledMemory != (2048+3)<<10 {
		t.Fatalf("%+v", st)
	}
	l.mu.Lock()
	for _, b := range l.pool.bufs {
		for i := range b.buf {
			if b.buf[i] != ([128]uint64{}) {
				l.mu.Unlock()
				t.Fatalf("pooled block %d not zeroed", i)
			}
		}
	}
	l.mu.Unlock()
	// A larger hash that does not fit beside the kept buffer drops it.
	big := newHasherWith(t, Policy{Preferred: Params{Scheme: Argon2id, Memory: 7 << 10, Time: 1, Parallelism: 1}, AllowWeak: true}, l)
	if _, err := big.Hash(ctx, []byte("pw")); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.PooledMemory > 8<<20 || st.ReleasedIdleBuffers != 1 {
		t.Fatalf("budget: %+v", st)
	}
	time.Sleep(300 * time.Millisecond)
	if st := l.Stats(); st.PooledMemory != 0 {
		t.Fatalf("idle memory not released: %+v", st)
	}
}
