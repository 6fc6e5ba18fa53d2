package handshake

import (
	"context"
	"fmt"
	"hash"
	"io"
	"net"
	"time"
)

// session is the state both sides keep.
type session struct {
	conn  net.Conn
	in    flightReader // the peer's frames, read within what is expected
	suite Suite
	th    hash.Hash // transcript hash of every frame so far
	ks    *keySchedule
	stats Stats
}

// timed runs f, a step of the handshake's cryptography, and counts its
// time in CryptoTime: key generation, KEM, ECDH, signatures, the key
// schedule, the finished MACs and the transcript hash.
func (s *session) timed(f func() error) error {
	defer s.count(time.Now())
	return f()
}

// count adds the time since start to CryptoTime.
func (s *session) count(start time.Time) { s.stats.CryptoTime += time.Since(start) }

// hash adds frames to the transcript.
func (s *session) hash(frames ...[]byte) {
	defer s.count(time.Now())
	for _, b := range frames {
		s.th.Write(b)
	}
}

// transcript returns the transcript hash so far.
func (s *session) transcript() []byte {
	defer s.count(time.Now())
	return s.th.Sum(nil)
}

// finished returns the finished MAC with label over the transcript so far.
func (s *session) finished(label string) []byte {
	defer s.count(time.Now())
	return s.ks.finished(label, s.th.Sum(nil))
}

// sessionKey derives the session key from the whole transcript and ends
// the key schedule.
func (s *session) sessionKey() [32]byte {
	defer s.count(time.Now())
	return s.ks.session(s.th.Sum(nil))
}

func (s *session) write(b []byte, addToTranscript bool) error {
	if addToTranscript {
		s.hash(b)
	}
	n, err := s.conn.Write(b)
	s.stats.BytesSent += n
	s.stats.Writes++
	if err != nil {
		return fmt.Errorf("handshake: write: %w", err)
	}
	return nil
}

// read reads the next frame, which must be of type want with exactly size
// bytes of payload, and adds it to the transcript.
func (s *session) read(want byte, size int) ([]byte, error) {
	typ, _, suite, n, raw, err := readHeader(&s.in)
	s.stats.BytesReceived += HeaderSize
	if err != nil {
		return nil, err
	}
	if typ == frameAlert && n == 1 {
		var code [1]byte
		if _, err := io.ReadFull(&s.in, code[:]); err == nil {
			return nil, &AlertError{Code: code[0]}
		}
		return nil, fmt.Errorf("%w: truncated alert", ErrProtocol)
	}
	if typ != want {
		return nil, fmt.Errorf("%w: got %s frame, want %s", ErrProtocol, frameNames[typ], frameNames[want])
	}
	if suite != s.suite.wire() {
		return nil, fmt.Errorf("%w: frame for suite %#04x in a %v handshake", ErrProtocol, suite, s.suite)
	}
	if n != size {
		return nil, fmt.Errorf("%w: %s frame of %d bytes, want %d", ErrProtocol, frameNames[typ], n, size)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(&s.in, buf); err != nil {
		return nil, ioErr(err, frameNames[typ])
	}
	s.stats.BytesReceived += n
	s.hash(raw[:], buf)
	return buf, nil
}

func (s *session) alert(code byte) {
	b := appendFrame(nil, frameAlert, s.suite.wire(), []byte{code})
	n, _ := s.conn.Write(b)
	s.stats.BytesSent += n
}

// deadline applies the timeout and the context to the connection, and
// returns the function that removes them and the absolute deadline.
func deadline(ctx context.Context, conn net.Conn, timeout time.Duration) (stop func(), at time.Time) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	conn.SetDeadline(d)
	cancel := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return func() {
		cancel()
		conn.SetDeadline(time.Time{})
	}, d
}
