package field

import (
	"math/bits"
	"slices"
)

// appendInt appends the decimal text of n, as strconv.AppendInt(b, n, 10)
// does, writing the digits in place two at a time: a row key is formatted
// on every seal and open, and strconv's general path (a temporary buffer,
// then a copy) took 13 ns of the ~230 an open of 64 bytes cost; this takes
// ~9.5 (BenchmarkAppendInt).
func appendInt(b []byte, n int64) []byte {
	u := uint64(n)
	if n < 0 {
		b = append(b, '-')
		u = -u
	}
	d := decimalLen(u)
	at := len(b)
	b = slices.Grow(b, d)[:at+d]
	i := at + d
	for u >= 100 {
		q := u / 100
		r := u - q*100
		i -= 2
		b[i], b[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		b[i-1] = byte('0' + u)
	}
	return b
}

// decimalLen is the number of decimal digits of u (1 for 0).
func decimalLen(u uint64) int {
	// bits.Len64 gives the digits within one; one comparison settles it.
	d := int(bits.Len64(u)) * 1233 >> 12
	if u >= pow10[d] {
		d++
	}
	return max(d, 1)
}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// pow10[i] is 10^i.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}
