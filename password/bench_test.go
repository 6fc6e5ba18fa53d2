package password

import (
	"context"
	"fmt"
	"testing"

	xargon2 "golang.org/x/crypto/argon2"

	"github.com/wardlab/ward/password/internal/argon2"
)

// BenchmarkArgon2 compares, at the field report's parameters (m=16384,
// t=2, p=1), OWASP's and RFC 9106's second recommendation (64 MiB, t=3,
// p=4), a whole Hasher.Hash with ward's core (limiter, pooled and zeroed
// memory, the SIMD path argon2.Impl() names) and x/crypto/argon2 (fresh
// memory per hash). Run it with -count and compare with benchstat.
func BenchmarkArgon2(b *testing.B) {
	ctx := context.Background()
	pw, salt := []byte("correct horse battery staple"), []byte("saltsaltsalt1234")
	for _, p := range []Params{SpringV58(), OWASP(), Strong()} {
		name := fmt.Sprintf("m=%d,t=%d,p=%d", p.Memory, p.Time, p.Parallelism)
		b.Run(name+"/ward-"+argon2.Impl(), func(b *testing.B) {
			h, err := NewHasher(Policy{Preferred: p, AllowWeak: true}, NewLimiter(LimiterConfig{MaxInFlight: 4}))
			if err != nil {
				b.Fatal(err)
			}
			h.Hash(ctx, pw) // steady state: the block memory is in the limiter's pool
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Hash(ctx, pw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/x-crypto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				xargon2.IDKey(pw, salt, p.Time, p.Memory, p.Parallelism, 32)
			}
		})
	}
}

// BenchmarkHash measures one hash per scheme through the Hasher.
func BenchmarkHash(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    Params
	}{{"bcrypt-10", Params{Scheme: Bcrypt, Cost: 10}}, {"scrypt-15", Params{Scheme: Scrypt, LogN: 15, R: 8, P: 1}}, {"pbkdf2-sha256-100k", Params{Scheme: PBKDF2SHA256, Iterations: 100_000}}} {
		b.Run(tc.name, func(b *testing.B) {
			h, err := NewHasher(Policy{Preferred: tc.p, AllowWeak: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Hash(ctx, []byte("correct horse battery staple")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRejectOverLimit shows the cost of refusing a hash that asks for
// 4 GiB: parsing only.
func BenchmarkRejectOverLimit(b *testing.B) {
	h, _ := NewHasher(Policy{}, nil)
	ctx := context.Background()
	enc := "$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0"
	b.ReportAllocs()
	for b.Loop() {
		h.Verify(ctx, []byte("x"), enc)
	}
}
