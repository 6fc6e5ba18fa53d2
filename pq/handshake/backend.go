package handshake

import (
	"crypto/ecdh"
	"crypto/mldsa"
	"crypto/mlkem"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/cloudflare/circl/dh/x25519"
	"github.com/cloudflare/circl/kem"
	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
	"github.com/cloudflare/circl/sign"
	cmldsa44 "github.com/cloudflare/circl/sign/mldsa/mldsa44"
	cmldsa65 "github.com/cloudflare/circl/sign/mldsa/mldsa65"
	cmldsa87 "github.com/cloudflare/circl/sign/mldsa/mldsa87"

	"github.com/wardlab/ward/pq/internal/avx"
)

// encapsulationKeySize and ciphertextSize are ML-KEM's sizes (FIPS 203)
// for a level, as the libraries define them.
func encapsulationKeySize(level int) int {
	switch level {
	case 512:
		return mlkem512.PublicKeySize
	case 768:
		return mlkem.EncapsulationKeySize768
	case 1024:
		return mlkem.EncapsulationKeySize1024
	}
	return 0
}

func ciphertextSize(level int) int {
	switch level {
	case 512:
		return mlkem512.CiphertextSize
	case 768:
		return mlkem.CiphertextSize768
	case 1024:
		return mlkem.CiphertextSize1024
	}
	return 0
}

// publicKeySize and signatureSize are ML-DSA's sizes (FIPS 204).
func publicKeySize(s Sig) int {
	switch s {
	case MLDSA44:
		return cmldsa44.PublicKeySize
	case MLDSA65:
		return cmldsa65.PublicKeySize
	case MLDSA87:
		return cmldsa87.PublicKeySize
	}
	return 0
}

func signatureSize(s Sig) int {
	switch s {
	case MLDSA44:
		return cmldsa44.SignatureSize
	case MLDSA65:
		return cmldsa65.SignatureSize
	case MLDSA87:
		return cmldsa87.SignatureSize
	}
	return 0
}

// x25519ShareSize is the size of an X25519 public key.
const x25519ShareSize = 32

// kemImpl is one ML-KEM parameter set in one backend.
type kemImpl interface {
	generate() (decapsulator, []byte, error)
	encapsulate(ek []byte) (ss, ct []byte, err error)
}

type decapsulator interface {
	decapsulate(ct []byte) ([]byte, error)
}

func newKEM(level int, b Backend) (kemImpl, error) {
	if b == Stdlib {
		switch level {
		case 768:
			return stdKEM768{}, nil
		case 1024:
			return stdKEM1024{}, nil
		}
	}
	switch level {
	case 512:
		return circlKEM{mlkem512.Scheme()}, nil
	case 768:
		return circlKEM{mlkem768.Scheme()}, nil
	case 1024:
		return circlKEM{mlkem1024.Scheme()}, nil
	}
	return nil, fmt.Errorf("handshake: no ML-KEM-%d", level)
}

type stdKEM768 struct{}

func (stdKEM768) generate() (decapsulator, []byte, error) {
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		return nil, nil, err
	}
	return stdDK768{dk}, dk.EncapsulationKey().Bytes(), nil
}
func (stdKEM768) encapsulate(ek []byte) ([]byte, []byte, error) {
	k, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return nil, nil, err
	}
	ss, ct := k.Encapsulate()
	return ss, ct, nil
}

type stdDK768 struct{ *mlkem.DecapsulationKey768 }

func (d stdDK768) decapsulate(ct []byte) ([]byte, error) { return d.Decapsulate(ct) }

type stdKEM1024 struct{}

func (stdKEM1024) generate() (decapsulator, []byte, error) {
	dk, err := mlkem.GenerateKey1024()
	if err != nil {
		return nil, nil, err
	}
	return stdDK1024{dk}, dk.EncapsulationKey().Bytes(), nil
}
func (stdKEM1024) encapsulate(ek []byte) ([]byte, []byte, error) {
	k, err := mlkem.NewEncapsulationKey1024(ek)
	if err != nil {
		return nil, nil, err
	}
	ss, ct := k.Encapsulate()
	return ss, ct, nil
}

type stdDK1024 struct{ *mlkem.DecapsulationKey1024 }

func (d stdDK1024) decapsulate(ct []byte) ([]byte, error) { return d.Decapsulate(ct) }

type circlKEM struct{ s kem.Scheme }

func (c circlKEM) generate() (decapsulator, []byte, error) {
	defer avx.ZeroUpper()
	pk, sk, err := c.s.GenerateKeyPair()
	if err != nil {
		return nil, nil, err
	}
	ek, err := pk.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	return circlDK{c.s, sk}, ek, nil
}
func (c circlKEM) encapsulate(ek []byte) ([]byte, []byte, error) {
	defer avx.ZeroUpper()
	pk, err := c.s.UnmarshalBinaryPublicKey(ek)
	if err != nil {
		return nil, nil, err
	}
	ct, ss, err := c.s.Encapsulate(pk)
	return ss, ct, err
}

type circlDK struct {
	s  kem.Scheme
	sk kem.PrivateKey
}

func (d circlDK) decapsulate(ct []byte) ([]byte, error) {
	defer avx.ZeroUpper()
	return d.s.Decapsulate(d.sk, ct)
}

// SigningKey is a server's long-term ML-DSA key. It is kept as its FIPS 204
// seed, so the same key is usable with either backend.
type SigningKey struct {
	alg  Sig
	seed [32]byte
	pub  []byte
	std  *mldsa.PrivateKey
	crcl sign.PrivateKey
}

// GenerateSigningKey returns a new random ML-DSA key.
func GenerateSigningKey(alg Sig) (*SigningKey, error) {
	var seed [32]byte
	rand.Read(seed[:])
	return NewSigningKey(alg, seed[:])
}

// NewSigningKey derives an ML-DSA key from its 32-byte seed (FIPS 204
// ML-DSA.KeyGen_internal). The seed is secret.
func NewSigningKey(alg Sig, seed []byte) (*SigningKey, error) {
	params, cs, err := sigParams(alg)
	if err != nil {
		return nil, err
	}
	if len(seed) != 32 {
		return nil, fmt.Errorf("handshake: ML-DSA seed must be 32 bytes")
	}
	k := &SigningKey{alg: alg}
	copy(k.seed[:], seed)
	if k.std, err = mldsa.NewPrivateKey(params, seed); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	k.pub = k.std.PublicKey().Bytes()
	_, k.crcl = cs.DeriveKey(seed)
	avx.ZeroUpper()
	return k, nil
}

// Algorithm returns the key's ML-DSA parameter set.
func (k *SigningKey) Algorithm() Sig { return k.alg }

// PublicKey returns the encoded public key.
func (k *SigningKey) PublicKey() []byte { return k.pub }

// Fingerprint returns SHA-256 of the public key: what clients pin.
func (k *SigningKey) Fingerprint() [32]byte { return Fingerprint(k.pub) }

// Seed returns the key's seed. It is secret.
func (k *SigningKey) Seed() []byte { return k.seed[:] }

// String names the key by its fingerprint only.
func (k *SigningKey) String() string {
	f := k.Fingerprint()
	return fmt.Sprintf("SigningKey(%v %x)", k.alg, f[:8])
}

// Format prints String whatever the verb.
func (k *SigningKey) Format(f fmt.State, _ rune) { f.Write([]byte(k.String())) }

func sigParams(alg Sig) (mldsa.Parameters, sign.Scheme, error) {
	switch alg {
	case MLDSA44:
		return mldsa.MLDSA44(), cmldsa44.Scheme(), nil
	case MLDSA65:
		return mldsa.MLDSA65(), cmldsa65.Scheme(), nil
	case MLDSA87:
		return mldsa.MLDSA87(), cmldsa87.Scheme(), nil
	}
	return mldsa.Parameters{}, nil, fmt.Errorf("handshake: unknown ML-DSA algorithm %v", alg)
}

// sigContext is the FIPS 204 context string of every handshake signature.
const sigContext = "ward-handshake-v1"

func (k *SigningKey) sign(b Backend, msg []byte) ([]byte, error) {
	if b == Circl {
		defer avx.ZeroUpper()
		_, cs, _ := sigParams(k.alg)
		return cs.Sign(k.crcl, msg, &sign.SignatureOpts{Context: sigContext}), nil
	}
	return k.std.Sign(rand.Reader, msg, &mldsa.Options{Context: sigContext})
}

func verify(alg Sig, b Backend, pub, msg, sig []byte) error {
	params, cs, err := sigParams(alg)
	if err != nil {
		return err
	}
	if b == Circl {
		defer avx.ZeroUpper()
		pk, err := cs.UnmarshalBinaryPublicKey(pub)
		if err != nil {
			return err
		}
		if !cs.Verify(pk, msg, sig, &sign.SignatureOpts{Context: sigContext}) {
			return ErrBadSignature
		}
		return nil
	}
	pk, err := mldsa.NewPublicKey(params, pub)
	if err != nil {
		return err
	}
	if err := mldsa.Verify(pk, msg, sig, &mldsa.Options{Context: sigContext}); err != nil {
		return ErrBadSignature
	}
	return nil
}

// xdh is X25519 in one backend: crypto/ecdh, or circl's dh/x25519.
type xdh interface {
	// generate makes a key pair: the private key as an object, so that
	// the shared secret does not rebuild it from bytes (crypto/ecdh's
	// NewPrivateKey computes the public key again, a second scalar
	// multiplication per side), and the public key's bytes.
	generate() (xdhKey, []byte, error)
}

// xdhKey is a private X25519 key of one handshake.
type xdhKey interface {
	// shared is the shared secret with peer's public key; it refuses a
	// low-order point.
	shared(peer []byte) ([]byte, error)
	// wipe clears the key's bytes where the backend lets us: circl's key
	// is ours to clear; crypto/ecdh keeps its own copy, which it offers
	// no way to clear (as crypto/tls's keys), unreachable once the
	// handshake drops the key.
	wipe()
}

func newXDH(b Backend) xdh {
	if b == Circl {
		return circlX25519{}
	}
	return stdX25519{}
}

type stdX25519 struct{}

type stdX25519Key struct{ k *ecdh.PrivateKey }

func (stdX25519) generate() (xdhKey, []byte, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	return &stdX25519Key{k}, k.PublicKey().Bytes(), nil
}

func (s *stdX25519Key) shared(peer []byte) ([]byte, error) {
	p, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, err
	}
	return s.k.ECDH(p) // rejects low-order points
}

func (s *stdX25519Key) wipe() { s.k = nil }

type circlX25519 struct{}

type circlX25519Key struct{ sk x25519.Key }

func (circlX25519) generate() (xdhKey, []byte, error) {
	var k circlX25519Key
	var pk x25519.Key
	rand.Read(k.sk[:])
	x25519.KeyGen(&pk, &k.sk)
	return &k, pk[:], nil
}

func (k *circlX25519Key) shared(peer []byte) ([]byte, error) {
	if len(peer) != x25519.Size {
		return nil, errors.New("x25519: bad key length")
	}
	var pk, ss x25519.Key
	copy(pk[:], peer)
	if !x25519.Shared(&ss, &k.sk, &pk) {
		return nil, errors.New("x25519: low-order point")
	}
	return ss[:], nil
}

func (k *circlX25519Key) wipe() { clear(k.sk[:]) }
