// Package handshake is a small, versioned key-exchange protocol over any
// net.Conn, for measuring what post-quantum key exchange costs.
//
// Suites combine a key exchange — X25519, ML-KEM-512/768/1024 (FIPS 203),
// or the hybrid X25519+ML-KEM — with an optional server signature by a
// long-term ML-DSA-44/65/87 key (FIPS 204) over the transcript. Both sides
// confirm the key (HMAC-SHA-256 "finished" messages, as in TLS 1.3), so a
// mismatch is an error, never a silent success.
//
// The flow is TLS 1.3's: the client sends its ephemeral shares, the server
// answers with its shares (for ML-KEM, the ciphertext), its public key if
// asked, its signature and its finished message in one flight, and the
// client has a confirmed key after one round trip. See README for the
// byte-level description.
//
// This is a measurement instrument and a reference design, not a
// replacement for TLS: it has no certificates, no resumption and no
// record layer. Use crypto/tls with X25519MLKEM768 in production.
package handshake

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"time"
)

// Flags in the ClientHello.
const (
	flagSendKey  = 1 << 0 // the client wants the server's public key on the wire
	flagSeparate = 1 << 1 // the client asks for the separate layout (experiments)
)

// FinishedSize is the size of a finished message (HMAC-SHA-256).
const FinishedSize = 32

// DefaultTimeout bounds a handshake when the config sets none.
const DefaultTimeout = 10 * time.Second

// ClientConfig configures the client side.
type ClientConfig struct {
	Suite   Suite
	Backend Backend
	// Layout asks the server to bundle or separate its flight.
	Layout Layout
	// PinnedKey is the server's ML-DSA public key. With it, the server does
	// not send its key (the "client already has it" wire variant).
	PinnedKey []byte
	// PinnedFingerprint is SHA-256 of the server's ML-DSA public key. With
	// it (and no PinnedKey) the server sends its key, as the seed did, and
	// the client checks it against the fingerprint.
	PinnedFingerprint []byte
	// InsecureSkipPin accepts any server key that signs correctly: it
	// authenticates nothing, and exists to reproduce the seed's measurement.
	InsecureSkipPin bool
	// Timeout bounds the whole handshake (default DefaultTimeout).
	Timeout time.Duration
}

// ServerConfig configures the server side.
type ServerConfig struct {
	// Suites lists the suites accepted (nil: every suite the server has keys for).
	Suites  []Suite
	Backend Backend
	// Keys are the server's long-term ML-DSA keys, at most one per level.
	Keys []*SigningKey
	// Timeout bounds the whole handshake (default DefaultTimeout).
	Timeout time.Duration
}

// Result is a finished handshake.
type Result struct {
	Suite Suite
	// Key is the 32-byte session key. It is secret.
	Key   [32]byte
	Stats Stats
}

// Stats describes one side of a handshake.
type Stats struct {
	BytesSent     int           // framing included, TCP/IP headers excluded
	BytesReceived int           // likewise
	Writes        int           // Write calls on the connection
	Flights       int           // protocol flights in both directions
	CryptoTime    time.Duration // time spent in key generation, KEM, ECDH, signatures and HKDF
	// Confirmed is, on the client, the time from the start of Client until
	// the server's finished message verified: the key is final then. The
	// client's own finished message is sent after it.
	Confirmed time.Duration
}

// Fingerprint returns SHA-256 of an ML-DSA public key.
func Fingerprint(pub []byte) [32]byte { return sha256.Sum256(pub) }

// session is the state both sides keep.
type session struct {
	conn  net.Conn
	suite Suite
	th    hash.Hash // transcript hash of every frame so far
	stats Stats
}

func (s *session) timed(f func() error) error {
	start := time.Now()
	err := f()
	s.stats.CryptoTime += time.Since(start)
	return err
}

func (s *session) write(b []byte, addToTranscript bool) error {
	if addToTranscript {
		s.th.Write(b)
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
	typ, _, suite, n, raw, err := readHeader(s.conn)
	s.stats.BytesReceived += HeaderSize
	if err != nil {
		return nil, err
	}
	if typ == frameAlert && n == 1 {
		var code [1]byte
		if _, err := io.ReadFull(s.conn, code[:]); err == nil {
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
	if _, err := io.ReadFull(s.conn, buf); err != nil {
		return nil, ioErr(err, frameNames[typ])
	}
	s.stats.BytesReceived += n
	s.th.Write(raw[:])
	s.th.Write(buf)
	return buf, nil
}

func (s *session) alert(code byte) {
	b := appendFrame(nil, frameAlert, s.suite.wire(), []byte{code})
	n, _ := s.conn.Write(b)
	s.stats.BytesSent += n
}

// deadline applies the timeout and the context to the connection.
func deadline(ctx context.Context, conn net.Conn, timeout time.Duration) (stop func()) {
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
	}
}

// keySchedule derives the finished keys and the session key from the
// shared secrets (ML-KEM's first, then X25519's, as TLS's X25519MLKEM768
// orders them). The concatenation is safe because the transcript, which
// binds both public shares and the ciphertext, enters every derivation.
type keySchedule struct{ prk []byte }

const scheduleSalt = "ward-handshake-v1"

// newKeySchedule consumes the shared secrets: they are zeroed.
func newKeySchedule(secrets ...[]byte) (*keySchedule, error) {
	var ikm []byte
	for _, s := range secrets {
		ikm = append(ikm, s...)
		clear(s)
	}
	defer clear(ikm)
	prk, err := hkdf.Extract(sha256.New, ikm, []byte(scheduleSalt))
	if err != nil {
		return nil, err
	}
	return &keySchedule{prk: prk}, nil
}

func (k *keySchedule) finished(label string, transcript []byte) []byte {
	fk, _ := hkdf.Expand(sha256.New, k.prk, label, 32)
	m := hmac.New(sha256.New, fk)
	m.Write(transcript)
	clear(fk)
	return m.Sum(nil)
}

func (k *keySchedule) session(transcript []byte) (out [32]byte) {
	key, _ := hkdf.Expand(sha256.New, k.prk, "session key\x00"+string(transcript), 32)
	copy(out[:], key)
	clear(key)
	clear(k.prk)
	return out
}

// shareSizes returns the exact payload sizes of the ClientHello (flags,
// ML-KEM encapsulation key, X25519 share) and the ServerKeyShare (ML-KEM
// ciphertext, X25519 share) for a suite.
func shareSizes(s Suite) (hello, keyShare int) {
	hello = 1
	if lvl := s.KEX.mlkemLevel(); lvl != 0 {
		hello += ekSize[lvl]
		keyShare += ctSize[lvl]
	}
	if s.KEX.hasX25519() {
		hello += 32
		keyShare += 32
	}
	return hello, keyShare
}

func clientHelloSize(s Suite) int { h, _ := shareSizes(s); return h }
func keyShareSize(s Suite) int    { _, k := shareSizes(s); return k }

// Client runs the client side of a handshake on conn.
func Client(ctx context.Context, conn net.Conn, cfg *ClientConfig) (*Result, error) {
	if !cfg.Suite.valid() {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedSuite, cfg.Suite)
	}
	signed := cfg.Suite.Sig != SigNone
	if signed && cfg.PinnedKey == nil && cfg.PinnedFingerprint == nil && !cfg.InsecureSkipPin {
		return nil, errors.New("handshake: a signed suite needs PinnedKey or PinnedFingerprint (or InsecureSkipPin)")
	}
	if signed && cfg.PinnedKey != nil && len(cfg.PinnedKey) != pkSize[cfg.Suite.Sig] {
		return nil, fmt.Errorf("handshake: pinned key has %d bytes, %v keys have %d", len(cfg.PinnedKey), cfg.Suite.Sig, pkSize[cfg.Suite.Sig])
	}
	defer deadline(ctx, conn, cfg.Timeout)()
	start := time.Now()
	s := &session{conn: conn, suite: cfg.Suite, th: sha256.New()}

	var (
		xpriv, xpub []byte
		dk          decapsulator
		ek          []byte
		kem         kemImpl
	)
	x := newXDH(cfg.Backend)
	lvl := cfg.Suite.KEX.mlkemLevel()
	err := s.timed(func() (err error) {
		if lvl != 0 {
			if kem, err = newKEM(lvl, cfg.Backend); err != nil {
				return err
			}
			if dk, ek, err = kem.generate(); err != nil {
				return err
			}
		}
		if cfg.Suite.KEX.hasX25519() {
			xpriv, xpub, err = x.generate()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("handshake: generating shares: %w", err)
	}
	flags := byte(0)
	if signed && cfg.PinnedKey == nil {
		flags |= flagSendKey
	}
	if cfg.Layout == Separate {
		flags |= flagSeparate
	}
	if err := s.write(appendFrame(nil, frameClientHello, cfg.Suite.wire(), []byte{flags}, ek, xpub), true); err != nil {
		return nil, err
	}

	share, err := s.read(frameServerKeyShare, keyShareSize(cfg.Suite))
	if err != nil {
		return nil, err
	}
	if signed {
		pub := cfg.PinnedKey
		if flags&flagSendKey != 0 {
			if pub, err = s.read(frameServerPublicKey, pkSize[cfg.Suite.Sig]); err != nil {
				return nil, err
			}
			if cfg.PinnedFingerprint != nil {
				fp := Fingerprint(pub)
				if subtle.ConstantTimeCompare(fp[:], cfg.PinnedFingerprint) != 1 {
					s.alert(alertDecode)
					return nil, fmt.Errorf("%w: fingerprint %x", ErrUntrustedKey, fp[:8])
				}
			}
		}
		signedTranscript := s.th.Sum(nil)
		sig, err := s.read(frameSignature, sigSize[cfg.Suite.Sig])
		if err != nil {
			return nil, err
		}
		if err := s.timed(func() error { return verify(cfg.Suite.Sig, cfg.Backend, pub, signedTranscript, sig) }); err != nil {
			s.alert(alertDecode)
			return nil, fmt.Errorf("%w (%v)", ErrBadSignature, err)
		}
	}
	var ks *keySchedule
	err = s.timed(func() error {
		var secrets [][]byte
		if lvl != 0 {
			ss, err := dk.decapsulate(share[:ctSize[lvl]])
			if err != nil {
				return err
			}
			secrets = append(secrets, ss)
			share = share[ctSize[lvl]:]
		}
		if xpriv != nil {
			ss, err := x.shared(xpriv, share)
			clear(xpriv)
			if err != nil {
				return err
			}
			secrets = append(secrets, ss)
		}
		ks, err = newKeySchedule(secrets...)
		return err
	})
	if err != nil {
		s.alert(alertDecode)
		return nil, fmt.Errorf("%w: server key share: %v", ErrProtocol, err)
	}
	want := ks.finished("server finished", s.th.Sum(nil))
	got, err := s.read(frameServerFinished, FinishedSize)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(got, want) {
		s.alert(alertFinished)
		return nil, ErrBadFinished
	}
	s.stats.Confirmed = time.Since(start)
	cf := ks.finished("client finished", s.th.Sum(nil))
	if err := s.write(appendFrame(nil, frameClientFinished, cfg.Suite.wire(), cf), true); err != nil {
		return nil, err
	}
	s.stats.Flights = 3
	return &Result{Suite: cfg.Suite, Key: ks.session(s.th.Sum(nil)), Stats: s.stats}, nil
}

// Server runs the server side of a handshake on conn.
func Server(ctx context.Context, conn net.Conn, cfg *ServerConfig) (*Result, error) {
	defer deadline(ctx, conn, cfg.Timeout)()
	s := &session{conn: conn, th: sha256.New()}

	typ, _, wire, n, raw, err := readHeader(conn)
	s.stats.BytesReceived += HeaderSize
	if errors.Is(err, ErrUnsupportedVersion) {
		s.alert(alertVersion)
	}
	if err != nil {
		return nil, err
	}
	suite, ok := suiteFromWire(wire)
	s.suite = suite
	switch {
	case typ != frameClientHello:
		s.alert(alertDecode)
		return nil, fmt.Errorf("%w: first frame is %s", ErrProtocol, frameNames[typ])
	case !ok || !cfg.accepts(suite):
		s.alert(alertSuite)
		return nil, fmt.Errorf("%w: %#04x", ErrUnsupportedSuite, wire)
	case n != clientHelloSize(suite):
		s.alert(alertDecode)
		return nil, fmt.Errorf("%w: ClientHello of %d bytes for %v", ErrProtocol, n, suite)
	}
	hello := make([]byte, n)
	if _, err := io.ReadFull(conn, hello); err != nil {
		return nil, ioErr(err, "ClientHello")
	}
	s.stats.BytesReceived += n
	s.th.Write(raw[:])
	s.th.Write(hello)
	flags := hello[0]
	signed := suite.Sig != SigNone
	if flags&^(flagSendKey|flagSeparate) != 0 || (!signed && flags&flagSendKey != 0) {
		s.alert(alertDecode)
		return nil, fmt.Errorf("%w: ClientHello flags %#02x", ErrProtocol, flags)
	}
	var key *SigningKey
	if signed {
		if key = cfg.key(suite.Sig); key == nil {
			s.alert(alertUnknownSign)
			return nil, fmt.Errorf("%w: no %v key", ErrUnsupportedSuite, suite.Sig)
		}
	}

	shares := hello[1:]
	lvl := suite.KEX.mlkemLevel()
	var ct, xpub []byte
	var ks *keySchedule
	err = s.timed(func() error {
		var secrets [][]byte
		if lvl != 0 {
			kem, err := newKEM(lvl, cfg.Backend)
			if err != nil {
				return err
			}
			ss, c, err := kem.encapsulate(shares[:ekSize[lvl]])
			if err != nil {
				return err
			}
			ct = c
			secrets = append(secrets, ss)
			shares = shares[ekSize[lvl]:]
		}
		if suite.KEX.hasX25519() {
			x := newXDH(cfg.Backend)
			priv, pub, err := x.generate()
			if err != nil {
				return err
			}
			ss, err := x.shared(priv, shares)
			clear(priv)
			if err != nil {
				return err
			}
			xpub = pub
			secrets = append(secrets, ss)
		}
		var err error
		ks, err = newKeySchedule(secrets...)
		return err
	})
	if err != nil {
		s.alert(alertDecode)
		return nil, fmt.Errorf("%w: client key share: %v", ErrProtocol, err)
	}

	// The flight: key share, [public key], [signature], finished.
	var writes [][]byte
	add := func(b []byte) {
		s.th.Write(b)
		writes = append(writes, b)
	}
	add(appendFrame(nil, frameServerKeyShare, wire, ct, xpub))
	if signed {
		if flags&flagSendKey != 0 {
			add(appendFrame(nil, frameServerPublicKey, wire, key.PublicKey()))
		}
		transcript := s.th.Sum(nil)
		var sig []byte
		if err := s.timed(func() (err error) { sig, err = key.sign(cfg.Backend, transcript); return err }); err != nil {
			s.alert(alertInternal)
			return nil, fmt.Errorf("handshake: signing: %w", err)
		}
		add(appendFrame(nil, frameSignature, wire, sig))
	}
	sf := appendFrame(nil, frameServerFinished, wire, ks.finished("server finished", s.th.Sum(nil)))
	s.th.Write(sf)
	if flags&flagSeparate != 0 && signed {
		// The seed's layout: each element its own write; the finished
		// message rides with the signature.
		writes[len(writes)-1] = append(writes[len(writes)-1], sf...)
	} else {
		var all []byte
		for _, w := range writes {
			all = append(all, w...)
		}
		writes = [][]byte{append(all, sf...)}
	}
	for _, w := range writes {
		if err := s.write(w, false); err != nil {
			return nil, err
		}
	}
	want := ks.finished("client finished", s.th.Sum(nil))
	got, err := s.read(frameClientFinished, FinishedSize)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(got, want) {
		return nil, ErrBadFinished
	}
	s.stats.Flights = 3
	return &Result{Suite: suite, Key: ks.session(s.th.Sum(nil)), Stats: s.stats}, nil
}

func (cfg *ServerConfig) key(alg Sig) *SigningKey {
	for _, k := range cfg.Keys {
		if k.alg == alg {
			return k
		}
	}
	return nil
}

func (cfg *ServerConfig) accepts(s Suite) bool {
	if cfg.Suites == nil {
		return s.Sig == SigNone || cfg.key(s.Sig) != nil
	}
	for _, a := range cfg.Suites {
		if a == s {
			return true
		}
	}
	return false
}
