package field

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendInt compares appendInt with strconv.AppendInt on every power
// of ten and its neighbours, the extremes and random values, appended to
// empty and non-empty buffers.
func TestAppendInt(t *testing.T) {
	values := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		values = append(values, p-1, p, p+1, -p, 10*p-1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, r.Int64(), -r.Int64N(1<<40), r.Int64N(1e6))
	}
	for _, n := range values {
		for _, prefix := range []string{"", "ab"} {
			got := appendInt([]byte(prefix), n)
			want := strconv.AppendInt([]byte(prefix), n, 10)
			if string(got) != string(want) {
				t.Fatalf("appendInt(%q, %d) = %q, want %q", prefix, n, got, want)
			}
		}
	}
}

func FuzzAppendInt(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, n int64) {
		if got, want := appendInt(nil, n), strconv.AppendInt(nil, n, 10); string(got) != string(want) {
			t.Fatalf("appendInt(%d) = %q, want %q", n, got, want)
		}
	})
}

func BenchmarkAppendInt(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			buf = strconv.AppendInt(buf[:0], 424242, 10)
		}
	})
	b.Run("ward", func(b *testing.B) {
		for b.Loop() {
			buf = appendInt(buf[:0], 424242)
		}
	})
}
