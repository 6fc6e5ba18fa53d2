package handshake

import (
	"context"
	"net"
	"testing"
)

// BenchmarkHandshake runs complete handshakes over real loopback TCP
// (connection set-up excluded), per suite and backend.
func BenchmarkHandshake(b *testing.B) {
	ks := serverKeys(b)
	for _, suite := range []Suite{{X25519, SigNone}, {MLKEM768, SigNone}, {X25519MLKEM768, SigNone}, {MLKEM768, MLDSA65}} {
		for _, be := range []Backend{Stdlib, Circl} {
			b.Run(suite.String()+"/"+be.String(), func(b *testing.B) {
				ln, _ := net.Listen("tcp", "127.0.0.1:0")
				defer ln.Close()
				scfg := &ServerConfig{Backend: be, Keys: ks}
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						Server(context.Background(), c, scfg)
						c.Close()
					}
				}()
				fp := keyFor(ks, MLDSA65).Fingerprint()
				ccfg := &ClientConfig{Suite: suite, Backend: be, PinnedFingerprint: fp[:]}
				var conf float64
				for b.Loop() {
					b.StopTimer()
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					r, err := Client(context.Background(), c, ccfg)
					if err != nil {
						b.Fatal(err)
					}
					conf += float64(r.Stats.Confirmed.Microseconds())
					c.Close()
				}
				b.ReportMetric(conf/float64(b.N)/1000, "ms-confirmed/op")
			})
		}
	}
}
