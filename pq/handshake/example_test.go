package handshake_test

import (
	"context"
	"fmt"
	"net"

	"github.com/wardlab/ward/pq/handshake"
)

// A hybrid X25519+ML-KEM-768 handshake authenticated by the server's
// ML-DSA-65 key, pinned by fingerprint.
func Example() {
	key, _ := handshake.GenerateSigningKey(handshake.MLDSA65)
	c, s := net.Pipe()
	done := make(chan *handshake.Result)
	go func() {
		r, _ := handshake.Server(context.Background(), s, &handshake.ServerConfig{Keys: []*handshake.SigningKey{key}})
		done <- r
	}()
	fp := key.Fingerprint()
	res, err := handshake.Client(context.Background(), c, &handshake.ClientConfig{
		Suite:             handshake.Suite{KEX: handshake.X25519MLKEM768, Sig: handshake.MLDSA65},
		PinnedFingerprint: fp[:],
	})
	server := <-done
	fmt.Println(err, res.Suite, res.Key == server.Key, res.Stats.BytesSent+res.Stats.BytesReceived)
	// Output: <nil> x25519+mlkem768+mldsa65 true 7710
}
