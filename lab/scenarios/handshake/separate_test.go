package handshakelab

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func frame(typ byte, payload int) []byte {
	b := []byte{typ, 1, 0x02, 0x02}
	b = binary.BigEndian.AppendUint32(b, uint32(payload))
	return append(b, bytes.Repeat([]byte{typ}, payload)...)
}

// TestSplitFlight cuts a signed flight as the field report sent it and
// leaves everything else whole.
func TestSplitFlight(t *testing.T) {
	share, pub, sig, fin := frame(2, 100), frame(3, 50), frame(4, 70), frame(5, 32)
	flight := bytes.Join([][]byte{share, pub, sig, fin}, nil)
	parts := splitFlight(flight)
	if len(parts) != 3 || !bytes.Equal(parts[0], share) || !bytes.Equal(parts[1], pub) || !bytes.Equal(parts[2], append(bytes.Clone(sig), fin...)) {
		t.Fatalf("signed flight cut into %d parts", len(parts))
	}
	unsigned := bytes.Join([][]byte{share, fin}, nil)
	if parts := splitFlight(unsigned); len(parts) != 1 {
		t.Fatalf("unsigned flight cut into %d parts", len(parts))
	}
	for _, bad := range [][]byte{flight[:len(flight)-1], flight[:5], nil} {
		if parts := splitFlight(bad); len(parts) != 1 || !bytes.Equal(parts[0], bad) {
			t.Fatalf("malformed input was cut")
		}
	}
}
