// Package pqtls measures and serves real TLS 1.3 with post-quantum key
// exchange (X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, MLKEM1024)
// and ML-DSA certificates, all from Go's crypto/tls and crypto/x509.
//
// It generates realistic certificate chains (root, intermediate, leaf) so
// that chain sizes are real, dials with byte and flight accounting and
// session resumption, estimates the cost of TCP's initial congestion
// window, and serves an HTTPS page that shows what a browser negotiated.
package pqtls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/fips140"
	"crypto/mldsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// CertAlg is the key type of every certificate in a chain.
type CertAlg uint8

// Certificate algorithms.
const (
	ECDSAP256 CertAlg = iota + 1
	Ed25519
	RSA2048
	MLDSA44
	MLDSA65
	MLDSA87
)

var certAlgNames = map[CertAlg]string{ECDSAP256: "ecdsa-p256", Ed25519: "ed25519", RSA2048: "rsa2048",
	MLDSA44: "mldsa44", MLDSA65: "mldsa65", MLDSA87: "mldsa87"}

func (a CertAlg) String() string {
	if n, ok := certAlgNames[a]; ok {
		return n
	}
	return fmt.Sprintf("CertAlg(%d)", uint8(a))
}

// PostQuantum reports whether the algorithm is ML-DSA.
func (a CertAlg) PostQuantum() bool { return a >= MLDSA44 }

// CertAlgs lists every algorithm.
func CertAlgs() []CertAlg { return []CertAlg{ECDSAP256, Ed25519, RSA2048, MLDSA44, MLDSA65, MLDSA87} }

// ParseCertAlg parses a name printed by String.
func ParseCertAlg(s string) (CertAlg, error) {
	for a, n := range certAlgNames {
		if n == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("pqtls: unknown certificate algorithm %q (ecdsa-p256, ed25519, rsa2048, mldsa44, mldsa65, mldsa87)", s)
}

func newKey(a CertAlg) (crypto.Signer, error) {
	switch a {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case MLDSA44:
		return mldsa.GenerateKey(mldsa.MLDSA44())
	case MLDSA65:
		return mldsa.GenerateKey(mldsa.MLDSA65())
	case MLDSA87:
		return mldsa.GenerateKey(mldsa.MLDSA87())
	}
	return nil, fmt.Errorf("pqtls: unknown certificate algorithm %v", a)
}

// Chain is a root CA, an intermediate CA and a leaf, all of one algorithm.
type Chain struct {
	Alg CertAlg
	// Certificate is the leaf and intermediate with the leaf's key: what a
	// server presents (the root stays with clients).
	Certificate tls.Certificate
	// Roots trusts the chain's root.
	Roots *x509.CertPool
	// Root, Intermediate and Leaf are the parsed certificates.
	Root, Intermediate, Leaf *x509.Certificate
	// WireBytes is the DER size of leaf plus intermediate: the chain on the
	// wire.
	WireBytes int
}

// GenerateChain makes a chain for the given DNS names and IP addresses
// (default "localhost", 127.0.0.1 and ::1).
func GenerateChain(alg CertAlg, hosts ...string) (*Chain, error) {
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	rootKey, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	interKey, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	leafKey, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := func(cn string, pathLen int) *x509.Certificate {
		return &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"ward lab"}},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
			MaxPathLen: pathLen, MaxPathLenZero: pathLen == 0, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	}
	rootT := ca("ward lab root "+alg.String(), 1)
	rootDER, err := x509.CreateCertificate(rand.Reader, rootT, rootT, rootKey.Public(), rootKey)
	if err != nil {
		return nil, fmt.Errorf("pqtls: root: %w", err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	interT := ca("ward lab intermediate "+alg.String(), 0)
	interDER, err := x509.CreateCertificate(rand.Reader, interT, root, interKey.Public(), rootKey)
	if err != nil {
		return nil, fmt.Errorf("pqtls: intermediate: %w", err)
	}
	inter, _ := x509.ParseCertificate(interDER)
	leafT := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if alg == RSA2048 {
		leafT.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leafT.IPAddresses = append(leafT.IPAddresses, ip)
		} else {
			leafT.DNSNames = append(leafT.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafT, inter, leafKey.Public(), interKey)
	if err != nil {
		return nil, fmt.Errorf("pqtls: leaf: %w", err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	roots := x509.NewCertPool()
	roots.AddCert(root)
	return &Chain{Alg: alg, Certificate: tls.Certificate{Certificate: [][]byte{leafDER, interDER}, PrivateKey: leafKey, Leaf: leaf},
		Roots: roots, Root: root, Intermediate: inter, Leaf: leaf, WireBytes: len(leafDER) + len(interDER)}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// Groups are the key exchanges measured, by name.
var Groups = map[string]tls.CurveID{
	"X25519": tls.X25519, "X25519MLKEM768": tls.X25519MLKEM768, "SecP256r1MLKEM768": tls.SecP256r1MLKEM768,
	"SecP384r1MLKEM1024": tls.SecP384r1MLKEM1024, "MLKEM1024": tls.MLKEM1024, "P256": tls.CurveP256,
}

// IsPostQuantum reports whether a group includes ML-KEM.
func IsPostQuantum(id tls.CurveID) bool {
	switch id {
	case tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024, tls.MLKEM1024:
		return true
	}
	return false
}

// AllGroups is every group Go supports, post-quantum ones first; in the
// FIPS 140-3 mode, every group it approves (not plain X25519).
func AllGroups() []tls.CurveID {
	all := []tls.CurveID{tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024, tls.MLKEM1024,
		tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}
	return slices.DeleteFunc(all, func(id tls.CurveID) bool { return !Approved(id) })
}

// PostQuantumGroups is AllGroups without the classical ones: the hybrids
// with ML-KEM and pure ML-KEM, a server's default.
func PostQuantumGroups() []tls.CurveID {
	return slices.DeleteFunc(AllGroups(), func(id tls.CurveID) bool { return !IsPostQuantum(id) })
}

// Approved reports whether Go's TLS negotiates a group in the current
// mode: every group outside the FIPS 140-3 mode; in it (GODEBUG=fips140=on
// or only, crypto/fips140.Enabled), the hybrids with ML-KEM, pure ML-KEM
// and the NIST curves, not plain X25519, which the module does not
// approve (X25519MLKEM768 is approved for its ML-KEM half).
func Approved(id tls.CurveID) bool {
	return !fips140.Enabled() || id != tls.X25519
}
