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
// client has a confirmed key after one round trip. FORMAT.md describes the
// wire format byte by byte. The code follows the phases: client.go and
// server.go run each side as methods on a state struct, keyschedule.go
// derives the keys, frame.go reads and writes frames, backend.go wraps the
// primitives of the two backends.
//
// This is a measurement instrument and a reference design, not a
// replacement for TLS: it has no certificates, no resumption and no
// record layer. Use crypto/tls with X25519MLKEM768 in production.
package handshake

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// Flags in the ClientHello.
const (
	flagSendKey = 1 << 0 // the client wants the server's public key on the wire
)

// FinishedSize is the size of a finished message (HMAC-SHA-256).
const FinishedSize = 32

// DefaultTimeout bounds a handshake when the config sets none.
const DefaultTimeout = 10 * time.Second

// DefaultHelloTimeout bounds, on the server, the wait for the client's
// first message: a client that connects and sends nothing holds its slot
// only that long.
const DefaultHelloTimeout = 2 * time.Second

// ClientConfig configures the client side.
type ClientConfig struct {
	Suite   Suite
	Backend Backend
	// PinnedKey is the server's ML-DSA public key. With it, the server does
	// not send its key (the "client already has it" wire variant).
	PinnedKey []byte
	// PinnedFingerprint is SHA-256 of the server's ML-DSA public key. With
	// it (and no PinnedKey) the server sends its key, as the post-quantum
	// field report's benchmark did, and the client checks it against the
	// fingerprint.
	PinnedFingerprint []byte
	// InsecureSkipPin accepts any server key that signs correctly: it
	// authenticates nothing, and exists to reproduce the post-quantum field
	// report's measurement.
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
	// HelloTimeout bounds the wait for the ClientHello (default
	// DefaultHelloTimeout).
	HelloTimeout time.Duration
}

// Result is a finished handshake. Printing it never shows the key.
type Result struct {
	Suite Suite
	// Key is the 32-byte session key. It is secret.
	Key   [32]byte
	Stats Stats
}

// String describes the result without the key.
func (r *Result) String() string {
	return fmt.Sprintf("Result{%v, key REDACTED, %d B sent, %d B received}", r.Suite, r.Stats.BytesSent, r.Stats.BytesReceived)
}

// Format prints String whatever the verb.
func (r *Result) Format(f fmt.State, _ rune) { f.Write([]byte(r.String())) }

// Stats describes one side of a handshake.
type Stats struct {
	BytesSent     int // framing included, TCP/IP headers excluded
	BytesReceived int // likewise
	Writes        int // Write calls on the connection
	Flights       int // protocol flights in both directions
	// CryptoTime is the time spent in key generation, KEM, ECDH,
	// signatures, the key schedule, finished MACs and the transcript hash:
	// on the client until the key is confirmed, on the server in all.
	CryptoTime time.Duration
	// Confirmed is, on the client, the time from the start of Client until
	// the server's finished message verified: the key is final then. The
	// client's own finished message is sent after it.
	Confirmed time.Duration
}

// Fingerprint returns SHA-256 of an ML-DSA public key.
func Fingerprint(pub []byte) [32]byte { return sha256.Sum256(pub) }
