package pqtls

import (
	"context"
	"crypto/tls"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardlab/ward/internal/browsertest"
)

// TestChromiumNegotiatesPQ drives headless Chromium against the server
// with its default groups and an ECDSA chain, and checks from the page
// that Chromium negotiated X25519MLKEM768.
func TestChromiumNegotiatesPQ(t *testing.T) {
	ctx := browsertest.Start(t, chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-quic", true))
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{chain(t, ECDSAP256)}})
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate("https://"+addr+"/")); err != nil {
		t.Fatal(err)
	}
	group, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("group").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	version, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("version").textContent`))
	t.Logf("Chromium negotiated %s with %s", version, group)
	if group != "X25519MLKEM768" || version != "TLS 1.3" {
		t.Fatalf("Chromium negotiated %s / %s, want TLS 1.3 / X25519MLKEM768", version, group)
	}
}

// TestClassicalInterop: Debian's openssl s_client and curl, which speak
// classical groups only, are refused by the default server and talk to one
// with AllowClassical; openssl's TLS 1.2 is refused by both.
func TestClassicalInterop(t *testing.T) {
	c := chain(t, ECDSAP256)
	pqOnly, stopPQ := startServer(t, ServerOptions{Chains: []*Chain{c}})
	defer stopPQ()
	addr, stop := startServer(t, ServerOptions{Chains: []*Chain{c}, AllowClassical: true})
	defer stop()
	if _, err := exec.LookPath("openssl"); err == nil {
		for _, a := range []string{pqOnly, addr} {
			if out, err := sClient(a, "-tls1_2"); err == nil || !strings.Contains(out, "alert protocol version") {
				t.Fatalf("%s: openssl -tls1_2 connected:\n%s", a, out)
			}
		}
		for _, g := range []string{"X25519", "P-256"} {
			if out, err := sClient(pqOnly, "-groups", g, "-tls1_3"); err == nil || !strings.Contains(out, "Cipher is (NONE)") {
				t.Fatalf("the post-quantum-only server: openssl -groups %s connected:\n%s", g, out)
			}
			out, err := sClient(addr, "-groups", g, "-tls1_3")
			if g == "X25519" && !Approved(tls.X25519) {
				if err == nil && strings.Contains(out, "Server Temp Key: X25519") {
					t.Fatal("the FIPS 140-3 mode negotiated plain X25519")
				}
				continue // refused, as the mode must
			}
			if err != nil || !strings.Contains(out, "TLSv1.3") {
				t.Fatalf("openssl -groups %s: %v\n%s", g, err, out)
			}
			want := map[string]string{"X25519": "X25519", "P-256": "ECDH, prime256v1"}[g]
			if !strings.Contains(out, "Server Temp Key: "+want) {
				t.Fatalf("openssl -groups %s: no %q in\n%s", g, want, out)
			}
		}
	} else {
		t.Log("openssl not installed: skipped")
	}
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command("curl", "-sk", "--max-time", "10", "https://"+addr+"/json").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"version":"TLS 1.3"`) || !strings.Contains(string(out), `"classical_allowed":true`) {
			t.Fatalf("curl: %v %s", err, out)
		}
	} else {
		t.Log("curl not installed: skipped")
	}
}

// sClient runs openssl s_client against addr with args and returns its
// output.
func sClient(addr string, args ...string) (string, error) {
	cmd := exec.Command("openssl", append([]string{"s_client", "-connect", addr}, args...)...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
