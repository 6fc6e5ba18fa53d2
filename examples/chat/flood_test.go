package chat

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardlab/ward/kms/local"
)

// BenchmarkRequestUnderIdleFlood measures what a new client waits for while
// 1,024 idle keep-alive connections from 16 prefixes (127.1.N.0/24, 64
// each: one request, then idle as long as the server lets them) hold the
// service's connection slots, with the total cap set just above them: the
// new client's connection evicts the oldest idle one. It reports the
// request latency's p50 and p95 (the seams issue asks p95 < 100 ms).
//
//	go test ./examples/chat -run '^$' -bench IdleFlood -benchtime 200x
func BenchmarkRequestUnderIdleFlood(b *testing.B) {
	dir := b.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{LoginPerMinute: 1 << 20, SignupPerHour: 1 << 20, SignupsPerMinute: 1 << 20, MaxConns: 1024, MaxConnsPerAddress: 64}}
	ctx := context.Background()
	if _, err := Init(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	app, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer serveBackground(b, app, ln)()
	url := "http://" + ln.Addr().String() + "/"
	var flood []*http.Client
	for p := range 16 {
		for i := range 64 {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.1.%d.%d", p, i+1))}}
			c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1}}
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close() // the connection stays open, idle
			flood = append(flood, c)
		}
	}
	defer func() {
		for _, c := range flood {
			c.CloseIdleConnections()
		}
	}()
	var lat []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// A fresh client, another prefix, a new connection each time.
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.2.%d.%d", i/250%250, i%250+1))}}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatalf("request %d under the flood: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*95/100], "p95-ms")
}

// TestIdleKeepAliveFlood: keep-alive connections that made one request and
// then sit idle fill the service's total cap from two prefixes; a new
// client from a third is still served (the oldest idle connection makes
// room), and a prefix cannot hold more than its share.
func TestIdleKeepAliveFlood(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"), KeyService: local.Generate(),
		Limits: Limits{MaxConns: 32, MaxConnsPerAddress: 16}}
	ctx := context.Background()
	if _, err := Init(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer serveBackground(t, app, ln)()
	url := "http://" + ln.Addr().String() + "/"
	get := func(from string, keepAlive bool) (*http.Client, error) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: !keepAlive}}
		resp, err := c.Get(url)
		if err != nil {
			return c, err
		}
		io.Copy(io.Discard, resp.Body)
		return c, resp.Body.Close()
	}
	for p := range 2 {
		for i := range 20 { // 4 more than a prefix may hold
			c, err := get(fmt.Sprintf("127.3.%d.%d", p, i+1), true)
			if err != nil {
				t.Fatalf("flood connection %d.%d: %v", p, i, err)
			}
			defer c.CloseIdleConnections()
		}
	}
	for i := range 5 {
		if _, err := get(fmt.Sprintf("127.4.0.%d", i+1), false); err != nil {
			t.Fatalf("a new client under the flood: %v", err)
		}
	}
}
