package password

import (
	"context"
	"testing"
)

// BenchmarkHash measures one hash per preset, through the Hasher (limiter
// included).
func BenchmarkHash(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    Params
	}{{"argon2id-seed", SpringV58}, {"argon2id-owasp", OWASP}, {"bcrypt-10", Params{Scheme: Bcrypt, Cost: 10}}} {
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
