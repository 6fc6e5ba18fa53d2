package handshake

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version in every frame header.
const Version = 1

// HeaderSize is the size of a frame header:
//
//	type(1) version(1) suite(2, big-endian) length(4, big-endian)
const HeaderSize = 8

// MaxFrame caps a frame's payload. The largest legitimate payload is an
// ML-DSA-87 signature (4,627 bytes).
const MaxFrame = 8192

// Frame types.
const (
	frameClientHello     = 1
	frameServerKeyShare  = 2
	frameServerPublicKey = 3
	frameSignature       = 4
	frameServerFinished  = 5
	frameClientFinished  = 6
	frameAlert           = 21
)

var frameNames = map[byte]string{
	frameClientHello: "ClientHello", frameServerKeyShare: "ServerKeyShare", frameServerPublicKey: "ServerPublicKey",
	frameSignature: "Signature", frameServerFinished: "ServerFinished", frameClientFinished: "ClientFinished", frameAlert: "Alert",
}

// Alert codes.
const (
	alertVersion     = 1
	alertSuite       = 2
	alertDecode      = 3
	alertFinished    = 4
	alertInternal    = 5
	alertUnknownSign = 6
)

// Errors. All are returned wrapped in context; match them with errors.Is.
var (
	// ErrProtocol means the peer sent something the protocol does not
	// allow: an unexpected frame type, a wrong length, a bad key share.
	ErrProtocol = errors.New("handshake: protocol violation")
	// ErrFrameTooLarge means a frame header announced more than MaxFrame
	// bytes; nothing was allocated for it.
	ErrFrameTooLarge = errors.New("handshake: frame too large")
	// ErrTruncated means the connection ended inside a frame.
	ErrTruncated = errors.New("handshake: truncated frame")
	// ErrUnsupportedVersion means the peer speaks another version.
	ErrUnsupportedVersion = errors.New("handshake: unsupported version")
	// ErrUnsupportedSuite means the peer asked for a suite this side does
	// not offer.
	ErrUnsupportedSuite = errors.New("handshake: unsupported suite")
	// ErrBadSignature means the server's signature did not verify.
	ErrBadSignature = errors.New("handshake: bad server signature")
	// ErrUntrustedKey means the server's public key does not match the
	// pinned key or fingerprint.
	ErrUntrustedKey = errors.New("handshake: server key does not match the pinned key")
	// ErrBadFinished means key confirmation failed: the two sides derived
	// different keys.
	ErrBadFinished = errors.New("handshake: key confirmation failed")
	// ErrTimeout means the handshake did not finish within its deadline.
	ErrTimeout = errors.New("handshake: timed out")
)

// AlertError is an alert received from the peer.
type AlertError struct{ Code byte }

func (e *AlertError) Error() string {
	reason := map[byte]string{alertVersion: "unsupported version", alertSuite: "unsupported suite", alertDecode: "decode error",
		alertFinished: "key confirmation failed", alertInternal: "internal error", alertUnknownSign: "no key for that signature algorithm"}[e.Code]
	if reason == "" {
		reason = fmt.Sprintf("code %d", e.Code)
	}
	return "handshake: peer sent alert: " + reason
}

// Is maps alerts to the sentinel errors.
func (e *AlertError) Is(target error) bool {
	switch e.Code {
	case alertVersion:
		return target == ErrUnsupportedVersion
	case alertSuite, alertUnknownSign:
		return target == ErrUnsupportedSuite
	case alertFinished:
		return target == ErrBadFinished
	}
	return target == ErrProtocol
}

func appendFrame(dst []byte, typ byte, suite uint16, payload ...[]byte) []byte {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	dst = append(dst, typ, Version)
	dst = binary.BigEndian.AppendUint16(dst, suite)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	for _, p := range payload {
		dst = append(dst, p...)
	}
	return dst
}

// readHeader reads a frame header and checks the cap before anything is
// allocated for the payload.
func readHeader(r io.Reader) (typ byte, version byte, suite uint16, n int, raw [HeaderSize]byte, err error) {
	if _, err = io.ReadFull(r, raw[:]); err != nil {
		return 0, 0, 0, 0, raw, ioErr(err, "frame header")
	}
	typ, version = raw[0], raw[1]
	suite = binary.BigEndian.Uint16(raw[2:4])
	length := binary.BigEndian.Uint32(raw[4:8])
	if version != Version {
		return typ, version, suite, 0, raw, fmt.Errorf("%w: %d", ErrUnsupportedVersion, version)
	}
	if length > MaxFrame {
		return typ, version, suite, 0, raw, fmt.Errorf("%w: %d bytes announced, cap %d", ErrFrameTooLarge, length, MaxFrame)
	}
	return typ, version, suite, int(length), raw, nil
}

func ioErr(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: connection closed in %s", ErrTruncated, what)
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("%w (%s): %w", ErrTimeout, what, err)
	}
	return fmt.Errorf("handshake: reading %s: %w", what, err)
}

// shareSizes returns the exact payload sizes of the ClientHello (flags,
// ML-KEM encapsulation key, X25519 share) and the ServerKeyShare (ML-KEM
// ciphertext, X25519 share) for a suite.
func shareSizes(s Suite) (hello, keyShare int) {
	hello = 1
	if lvl := s.KEX.MLKEMLevel(); lvl != 0 {
		hello += encapsulationKeySize(lvl)
		keyShare += ciphertextSize(lvl)
	}
	if s.KEX.HasX25519() {
		hello += x25519ShareSize
		keyShare += x25519ShareSize
	}
	return hello, keyShare
}

func clientHelloSize(s Suite) int { h, _ := shareSizes(s); return h }
func keyShareSize(s Suite) int    { _, k := shareSizes(s); return k }

// maxClientHello is the largest ClientHello payload of any suite: what a
// server reads ahead for a hello, instead of the largest frame, so that a
// connection that has sent nothing yet holds ~1.6 KB rather than ~8 KB.
var maxClientHello = func() int {
	n := 0
	for _, s := range AllSuites() {
		n = max(n, clientHelloSize(s))
	}
	return n
}()
