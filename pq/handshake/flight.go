package handshake

import (
	"io"
	"net"
)

// flightReader reads a peer's frames with as few system calls as the
// peer's writes allow: each read asks for at most what remains of the
// frames announced (expect), and the last frame of a handshake is
// announced exactly, so that whatever the application sends after the
// handshake stays in the connection for it. A server flight written at
// once is read in one call instead of two per frame.
type flightReader struct {
	conn net.Conn
	buf  []byte
	r, w int
	left int // bytes still expected from the connection, beyond the buffer
}

// expect announces that n more bytes, counted from the next unread one,
// belong to the handshake.
func (f *flightReader) expect(n int) {
	f.left = max(0, n-(f.w-f.r))
	if need := f.left; need > len(f.buf)-f.w && f.r == f.w {
		if cap(f.buf) < need {
			f.buf = make([]byte, min(need, MaxFrame+HeaderSize))
		}
		f.buf = f.buf[:cap(f.buf)]
		f.r, f.w = 0, 0
	}
}

// Read serves buffered bytes first; when none are left it reads from the
// connection at most what is still expected (at least one byte's worth,
// as a plain read would: a frame beyond what was announced, such as an
// alert, is read as it comes).
func (f *flightReader) Read(p []byte) (int, error) {
	if f.r == f.w {
		if f.left <= 0 || len(f.buf) == 0 {
			return f.conn.Read(p)
		}
		n, err := f.conn.Read(f.buf[:min(len(f.buf), f.left)])
		f.r, f.w = 0, n
		f.left -= n
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, f.buf[f.r:f.w])
	f.r += n
	return n, nil
}

var _ io.Reader = (*flightReader)(nil)
