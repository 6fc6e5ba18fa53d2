package handshake

import (
	"fmt"
	"strings"
)

// KEX is a key-exchange mechanism. The zero value is invalid.
type KEX uint8

// Key exchanges.
const (
	KEXUnknown KEX = iota
	X25519
	MLKEM512
	MLKEM768
	MLKEM1024
	X25519MLKEM512
	X25519MLKEM768
	X25519MLKEM1024
)

// Sig is the server's signature algorithm; SigNone means the suite gives
// confidentiality only (like the first three modes of the post-quantum field report).
type Sig uint8

// Signature algorithms.
const (
	SigNone Sig = iota
	MLDSA44
	MLDSA65
	MLDSA87
)

var kexNames = map[KEX]string{
	X25519: "x25519", MLKEM512: "mlkem512", MLKEM768: "mlkem768", MLKEM1024: "mlkem1024",
	X25519MLKEM512: "x25519+mlkem512", X25519MLKEM768: "x25519+mlkem768", X25519MLKEM1024: "x25519+mlkem1024",
}

var sigNames = map[Sig]string{MLDSA44: "mldsa44", MLDSA65: "mldsa65", MLDSA87: "mldsa87"}

func (k KEX) String() string {
	if n, ok := kexNames[k]; ok {
		return n
	}
	return fmt.Sprintf("KEX(%d)", uint8(k))
}

func (s Sig) String() string {
	if s == SigNone {
		return "none"
	}
	if n, ok := sigNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Sig(%d)", uint8(s))
}

// HasX25519 reports whether the exchange includes X25519 (alone or in a
// hybrid).
func (k KEX) HasX25519() bool { return k == X25519 || k >= X25519MLKEM512 && k <= X25519MLKEM1024 }

// MLKEMLevel returns the ML-KEM parameter set, 512, 768 or 1024, or 0
// when the exchange has no ML-KEM.
func (k KEX) MLKEMLevel() int {
	switch k {
	case MLKEM512, X25519MLKEM512:
		return 512
	case MLKEM768, X25519MLKEM768:
		return 768
	case MLKEM1024, X25519MLKEM1024:
		return 1024
	}
	return 0
}

// Suite is a key exchange and an optional server signature. On the wire
// it is the uint16 KEX<<8 | Sig.
type Suite struct {
	KEX KEX
	Sig Sig
}

// String returns names such as "x25519", "x25519+mlkem768" or
// "mlkem768+mldsa65".
func (s Suite) String() string {
	if s.Sig == SigNone {
		return s.KEX.String()
	}
	return s.KEX.String() + "+" + s.Sig.String()
}

func (s Suite) wire() uint16 { return uint16(s.KEX)<<8 | uint16(s.Sig) }

func suiteFromWire(v uint16) (Suite, bool) {
	s := Suite{KEX(v >> 8), Sig(v & 0xff)}
	return s, s.valid()
}

func (s Suite) valid() bool {
	_, okK := kexNames[s.KEX]
	_, okS := sigNames[s.Sig]
	return okK && (s.Sig == SigNone || okS)
}

// ParseSuite parses a name printed by Suite.String.
func ParseSuite(name string) (Suite, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	for sig, sn := range sigNames {
		if kex, ok := strings.CutSuffix(name, "+"+sn); ok {
			for k, kn := range kexNames {
				if kn == kex {
					return Suite{k, sig}, nil
				}
			}
		}
	}
	for k, kn := range kexNames {
		if kn == name {
			return Suite{k, SigNone}, nil
		}
	}
	return Suite{}, fmt.Errorf("handshake: unknown suite %q (for example x25519, mlkem768, x25519+mlkem768, mlkem768+mldsa65)", name)
}

// AllSuites lists every key exchange unsigned, and every ML-KEM level
// signed with each ML-DSA level.
func AllSuites() []Suite {
	var out []Suite
	for k := X25519; k <= X25519MLKEM1024; k++ {
		out = append(out, Suite{k, SigNone})
	}
	for k := MLKEM512; k <= X25519MLKEM1024; k++ {
		for s := MLDSA44; s <= MLDSA87; s++ {
			out = append(out, Suite{k, s})
		}
	}
	return out
}

// Backend selects the implementation of ML-KEM and ML-DSA.
type Backend uint8

const (
	// Stdlib uses crypto/mlkem, crypto/mldsa and crypto/ecdh; ML-KEM-512,
	// which the standard library lacks, comes from circl.
	Stdlib Backend = iota
	// Circl uses github.com/cloudflare/circl for ML-KEM, ML-DSA and X25519.
	Circl
)

func (b Backend) String() string {
	if b == Circl {
		return "circl"
	}
	return "stdlib"
}

// ParseBackend parses "stdlib" or "circl".
func ParseBackend(s string) (Backend, error) {
	switch s {
	case "stdlib", "go":
		return Stdlib, nil
	case "circl":
		return Circl, nil
	}
	return 0, fmt.Errorf("handshake: unknown backend %q (stdlib or circl)", s)
}
