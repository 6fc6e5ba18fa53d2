package handshakelab

import (
	"encoding/binary"
	"net"
	"sync/atomic"
)

// Layout is how the server's flight reaches the wire in a measured
// configuration: ward's handshake always bundles it (one write); the
// post-quantum field report sent its public key and its signed KEM key in
// separate writes. The lab reproduces that layout itself (a lab protocol,
// not ward's), by splitting the bundled flight at frame boundaries, so that
// the "separate vs bundled" question is answered without experiment flags
// in the product's wire format.
type Layout uint8

const (
	// Bundled is ward's layout: the server's whole flight in one write.
	Bundled Layout = iota
	// Separate is the field report's: the key share, the public key (when
	// sent), and the signature with the finished message, each its own
	// write.
	Separate
)

// String returns "bundled" or "separate".
func (l Layout) String() string {
	if l == Separate {
		return "separate"
	}
	return "bundled"
}

// Frame types and header size of ward's handshake (FORMAT.md, "Handshake
// protocol"), as far as the split needs them.
const (
	frameHeader         = 8 // type, version, suite (2), length (4)
	frameSignature      = 4
	frameServerFinished = 5
)

// separateFlight wraps a server's connection so that a write holding a
// signed flight is sent as the field report sent it: one write per frame,
// the finished message riding with the signature. Other writes pass
// through. writes counts the writes that reach conn.
type separateFlight struct {
	net.Conn
	writes atomic.Int64
}

func newSeparateFlight(c net.Conn) *separateFlight { return &separateFlight{Conn: c} }

func (s *separateFlight) Write(p []byte) (int, error) {
	parts := splitFlight(p)
	n := 0
	for _, part := range parts {
		s.writes.Add(1)
		m, err := s.Conn.Write(part)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// splitFlight cuts b at frame boundaries when it holds a signature frame:
// each frame alone, the finished frame appended to the one before it. b
// that does not parse as whole frames, or holds no signature, stays whole.
func splitFlight(b []byte) [][]byte {
	var parts [][]byte
	signed := false
	for rest := b; len(rest) > 0; {
		if len(rest) < frameHeader {
			return [][]byte{b}
		}
		n := frameHeader + int(binary.BigEndian.Uint32(rest[4:8]))
		if n > len(rest) || n < frameHeader {
			return [][]byte{b}
		}
		frame := rest[:n]
		switch {
		case frame[0] == frameServerFinished && len(parts) > 0:
			last := parts[len(parts)-1]
			parts[len(parts)-1] = last[:len(last)+n] // contiguous in b
		default:
			parts = append(parts, frame)
		}
		signed = signed || frame[0] == frameSignature
		rest = rest[n:]
	}
	if !signed {
		return [][]byte{b}
	}
	return parts
}
