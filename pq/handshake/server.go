package handshake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// serverHandshake is the server's state, phase by phase: the ClientHello,
// encapsulation and X25519, the flight (key share, public key, signature,
// finished), and the client's finished message.
type serverHandshake struct {
	*session
	cfg   *ServerConfig
	flags byte
	key   *SigningKey
	end   time.Time // the whole handshake's deadline
}

// Server runs the server side of a handshake on conn. The ClientHello must
// arrive within cfg.HelloTimeout, the whole handshake within cfg.Timeout.
func Server(ctx context.Context, conn net.Conn, cfg *ServerConfig) (*Result, error) {
	stop, end := deadline(ctx, conn, cfg.Timeout)
	defer stop()
	hs := &serverHandshake{session: &session{conn: conn, th: sha256.New()}, cfg: cfg, end: end}
	hs.in.conn = conn
	hello, err := hs.readHello()
	if err != nil {
		return nil, err
	}
	ct, xpub, err := hs.deriveKeys(hello[1:])
	if err != nil {
		hs.alert(alertDecode)
		return nil, fmt.Errorf("%w: client key share: %v", ErrProtocol, err)
	}
	if err := hs.sendFlight(ct, xpub); err != nil {
		return nil, err
	}
	want := hs.finished("client finished")
	hs.in.expect(HeaderSize + FinishedSize)
	got, err := hs.read(frameClientFinished, FinishedSize)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(got, want) {
		return nil, ErrBadFinished
	}
	hs.stats.Flights = 3
	return &Result{Suite: hs.suite, Key: hs.sessionKey(), Stats: hs.stats}, nil
}

// readHello reads and checks the ClientHello, within HelloTimeout.
func (hs *serverHandshake) readHello() ([]byte, error) {
	helloTO := hs.cfg.HelloTimeout
	if helloTO <= 0 {
		helloTO = DefaultHelloTimeout
	}
	if d := time.Now().Add(helloTO); d.Before(hs.end) {
		hs.conn.SetReadDeadline(d)
	}
	// At most a header and the largest hello: the client sends nothing
	// after its hello until it has the server's flight, so one read takes
	// the whole hello and nothing of what follows the handshake (a larger
	// frame is refused below, by its announced length).
	hs.in.expect(HeaderSize + maxClientHello)
	typ, _, wire, n, raw, err := readHeader(&hs.in)
	hs.stats.BytesReceived += HeaderSize
	if errors.Is(err, ErrUnsupportedVersion) {
		hs.alert(alertVersion)
	}
	if err != nil {
		return nil, err
	}
	suite, ok := suiteFromWire(wire)
	hs.suite = suite
	switch {
	case typ != frameClientHello:
		hs.alert(alertDecode)
		return nil, fmt.Errorf("%w: first frame is %s", ErrProtocol, frameNames[typ])
	case !ok || !hs.cfg.accepts(suite):
		hs.alert(alertSuite)
		return nil, fmt.Errorf("%w: %#04x", ErrUnsupportedSuite, wire)
	case n != clientHelloSize(suite):
		hs.alert(alertDecode)
		return nil, fmt.Errorf("%w: ClientHello of %d bytes for %v", ErrProtocol, n, suite)
	}
	hello := make([]byte, n)
	hs.in.expect(n)
	if _, err := io.ReadFull(&hs.in, hello); err != nil {
		return nil, ioErr(err, "ClientHello")
	}
	hs.conn.SetReadDeadline(hs.end) // back to the handshake's deadline
	hs.stats.BytesReceived += n
	hs.hash(raw[:], hello)
	return hello, hs.checkFlags(hello[0])
}

// checkFlags validates the ClientHello's flags and finds the signing key.
func (hs *serverHandshake) checkFlags(flags byte) error {
	signed := hs.suite.Sig != SigNone
	if flags&^flagSendKey != 0 || (!signed && flags&flagSendKey != 0) {
		hs.alert(alertDecode)
		return fmt.Errorf("%w: ClientHello flags %#02x", ErrProtocol, flags)
	}
	hs.flags = flags
	if signed {
		if hs.key = hs.cfg.key(hs.suite.Sig); hs.key == nil {
			hs.alert(alertUnknownSign)
			return fmt.Errorf("%w: no %v key", ErrUnsupportedSuite, hs.suite.Sig)
		}
	}
	return nil
}

// deriveKeys encapsulates to the client's ML-KEM key and runs X25519,
// returning the server's shares, and starts the key schedule.
func (hs *serverHandshake) deriveKeys(shares []byte) (ct, xpub []byte, err error) {
	err = hs.timed(func() error {
		var secrets [][]byte
		if lvl := hs.suite.KEX.MLKEMLevel(); lvl != 0 {
			kem, err := newKEM(lvl, hs.cfg.Backend)
			if err != nil {
				return err
			}
			ss, c, err := kem.encapsulate(shares[:encapsulationKeySize(lvl)])
			if err != nil {
				return err
			}
			ct = c
			secrets = append(secrets, ss)
			shares = shares[encapsulationKeySize(lvl):]
		}
		if hs.suite.KEX.HasX25519() {
			x := newXDH(hs.cfg.Backend)
			key, pub, err := x.generate()
			if err != nil {
				return err
			}
			ss, err := key.shared(shares)
			key.wipe()
			if err != nil {
				return err
			}
			xpub = pub
			secrets = append(secrets, ss)
		}
		var err error
		hs.ks, err = newKeySchedule(secrets...)
		return err
	})
	return ct, xpub, err
}

// sendFlight writes key share, [public key], [signature] and finished in
// one write: one round trip, signed or not.
func (hs *serverHandshake) sendFlight(ct, xpub []byte) error {
	wire := hs.suite.wire()
	var flight []byte
	add := func(b []byte) {
		hs.hash(b)
		flight = append(flight, b...)
	}
	add(appendFrame(nil, frameServerKeyShare, wire, ct, xpub))
	if hs.suite.Sig != SigNone {
		if hs.flags&flagSendKey != 0 {
			add(appendFrame(nil, frameServerPublicKey, wire, hs.key.PublicKey()))
		}
		transcript := hs.transcript()
		var sig []byte
		if err := hs.timed(func() (err error) { sig, err = hs.key.sign(hs.cfg.Backend, transcript); return err }); err != nil {
			hs.alert(alertInternal)
			return fmt.Errorf("handshake: signing: %w", err)
		}
		add(appendFrame(nil, frameSignature, wire, sig))
	}
	add(appendFrame(nil, frameServerFinished, wire, hs.finished("server finished")))
	return hs.write(flight, false)
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
	if !Approved(s, cfg.Backend) { // the FIPS 140-3 mode: refused with a suite alert
		return false
	}
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
