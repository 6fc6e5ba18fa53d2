package handshake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"time"
)

// clientHandshake is the client's state, phase by phase: shares,
// ClientHello, the server's flight (key share, public key, signature),
// the key schedule, and the finished messages.
type clientHandshake struct {
	*session
	cfg   *ClientConfig
	start time.Time
	flags byte

	x    xdh
	xkey xdhKey
	kem  kemImpl
	dk   decapsulator
}

// Client runs the client side of a handshake on conn.
func Client(ctx context.Context, conn net.Conn, cfg *ClientConfig) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	stop, _ := deadline(ctx, conn, cfg.Timeout)
	defer stop()
	hs := &clientHandshake{session: &session{conn: conn, suite: cfg.Suite, th: sha256.New()}, cfg: cfg, start: time.Now()}
	hs.in.conn = conn
	if err := hs.sendHello(); err != nil {
		return nil, err
	}
	hs.in.expect(hs.flightSize())
	share, err := hs.read(frameServerKeyShare, keyShareSize(cfg.Suite))
	if err != nil {
		return nil, err
	}
	if cfg.Suite.Sig != SigNone {
		if err := hs.verifyServer(); err != nil {
			return nil, err
		}
	}
	if err := hs.deriveKeys(share); err != nil {
		hs.alert(alertDecode)
		return nil, fmt.Errorf("%w: server key share: %v", ErrProtocol, err)
	}
	return hs.finish()
}

func (cfg *ClientConfig) check() error {
	if !cfg.Suite.valid() {
		return fmt.Errorf("%w: %v", ErrUnsupportedSuite, cfg.Suite)
	}
	if err := checkApproved(cfg.Suite, cfg.Backend); err != nil {
		return err
	}
	signed := cfg.Suite.Sig != SigNone
	if signed && cfg.PinnedKey == nil && cfg.PinnedFingerprint == nil && !cfg.InsecureSkipPin {
		return errors.New("handshake: a signed suite needs PinnedKey or PinnedFingerprint (or InsecureSkipPin)")
	}
	if signed && cfg.PinnedKey != nil && len(cfg.PinnedKey) != publicKeySize(cfg.Suite.Sig) {
		return fmt.Errorf("handshake: pinned key has %d bytes, %v keys have %d", len(cfg.PinnedKey), cfg.Suite.Sig, publicKeySize(cfg.Suite.Sig))
	}
	return nil
}

// sendHello generates the ephemeral shares and sends the ClientHello.
func (hs *clientHandshake) sendHello() error {
	var ek, xpub []byte
	hs.x = newXDH(hs.cfg.Backend)
	err := hs.timed(func() (err error) {
		if lvl := hs.suite.KEX.MLKEMLevel(); lvl != 0 {
			if hs.kem, err = newKEM(lvl, hs.cfg.Backend); err != nil {
				return err
			}
			if hs.dk, ek, err = hs.kem.generate(); err != nil {
				return err
			}
		}
		if hs.suite.KEX.HasX25519() {
			hs.xkey, xpub, err = hs.x.generate()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("handshake: generating shares: %w", err)
	}
	if hs.suite.Sig != SigNone && hs.cfg.PinnedKey == nil {
		hs.flags |= flagSendKey
	}
	return hs.write(appendFrame(nil, frameClientHello, hs.suite.wire(), []byte{hs.flags}, ek, xpub), true)
}

// flightSize is the size of the server's flight this ClientHello asks
// for: key share, [public key], [signature], finished, each framed.
func (hs *clientHandshake) flightSize() int {
	n := HeaderSize + keyShareSize(hs.suite) + HeaderSize + FinishedSize
	if sig := hs.suite.Sig; sig != SigNone {
		n += HeaderSize + signatureSize(sig)
		if hs.flags&flagSendKey != 0 {
			n += HeaderSize + publicKeySize(sig)
		}
	}
	return n
}

// verifyServer reads the server's public key (unless pinned), checks it
// against the pin, and verifies its signature over the transcript.
func (hs *clientHandshake) verifyServer() error {
	sig := hs.suite.Sig
	pub := hs.cfg.PinnedKey
	if hs.flags&flagSendKey != 0 {
		var err error
		if pub, err = hs.read(frameServerPublicKey, publicKeySize(sig)); err != nil {
			return err
		}
		if hs.cfg.PinnedFingerprint != nil {
			start := time.Now()
			fp := Fingerprint(pub)
			hs.count(start)
			if subtle.ConstantTimeCompare(fp[:], hs.cfg.PinnedFingerprint) != 1 {
				hs.alert(alertDecode)
				return fmt.Errorf("%w: fingerprint %x", ErrUntrustedKey, fp[:8])
			}
		}
	}
	signed := hs.transcript()
	signature, err := hs.read(frameSignature, signatureSize(sig))
	if err != nil {
		return err
	}
	if err := hs.timed(func() error { return verify(sig, hs.cfg.Backend, pub, signed, signature) }); err != nil {
		hs.alert(alertDecode)
		return fmt.Errorf("%w (%v)", ErrBadSignature, err)
	}
	return nil
}

// deriveKeys decapsulates and runs X25519 on the server's share, and
// starts the key schedule (ML-KEM's secret first, as X25519MLKEM768 does).
func (hs *clientHandshake) deriveKeys(share []byte) error {
	return hs.timed(func() error {
		var secrets [][]byte
		if lvl := hs.suite.KEX.MLKEMLevel(); lvl != 0 {
			ss, err := hs.dk.decapsulate(share[:ciphertextSize(lvl)])
			if err != nil {
				return err
			}
			secrets = append(secrets, ss)
			share = share[ciphertextSize(lvl):]
		}
		if hs.xkey != nil {
			ss, err := hs.xkey.shared(share)
			hs.xkey.wipe()
			if err != nil {
				return err
			}
			secrets = append(secrets, ss)
		}
		var err error
		hs.ks, err = newKeySchedule(secrets...)
		return err
	})
}

// finish checks the server's finished message (the key is confirmed
// then) and sends the client's.
func (hs *clientHandshake) finish() (*Result, error) {
	want := hs.finished("server finished")
	got, err := hs.read(frameServerFinished, FinishedSize)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(got, want) {
		hs.alert(alertFinished)
		return nil, ErrBadFinished
	}
	hs.stats.Confirmed = time.Since(hs.start)
	crypto := hs.stats.CryptoTime // what follows is not on the way to the confirmation
	cf := hs.finished("client finished")
	if err := hs.write(appendFrame(nil, frameClientFinished, hs.suite.wire(), cf), true); err != nil {
		return nil, err
	}
	key := hs.sessionKey()
	hs.stats.CryptoTime = crypto
	hs.stats.Flights = 3
	return &Result{Suite: hs.suite, Key: key, Stats: hs.stats}, nil
}
