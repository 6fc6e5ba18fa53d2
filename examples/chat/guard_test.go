package chat

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestClientAddr(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, c := range []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"direct client", "198.51.100.7:5000", nil, "198.51.100.7"},
		{"direct client's own header is ignored", "198.51.100.7:5000", []string{"203.0.113.9"}, "198.51.100.7"},
		{"behind a proxy", "10.0.0.2:5000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"the client's forged entry before the proxy's", "10.0.0.2:5000", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		// HAProxy adds a line of its own after the client's.
		{"the client's forged line before the proxy's line", "10.0.0.2:5000", []string{"1.2.3.4", "203.0.113.9"}, "203.0.113.9"},
		{"two proxies, lines and commas mixed", "10.0.0.2:5000", []string{"1.2.3.4, 203.0.113.9", "10.1.1.1"}, "203.0.113.9"},
		{"a chain of proxies", "10.0.0.2:5000", []string{"203.0.113.9,10.0.0.5, 10.0.0.4"}, "203.0.113.9"},
		{"IPv6 client, counted per /64", "[fd00::1]:5000", []string{"2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::/64"},
		{"IPv4-mapped", "10.0.0.2:5000", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"garbage ends the walk at the proxy", "10.0.0.2:5000", []string{"not an address"}, "10.0.0.2"},
		{"garbage before a real entry", "10.0.0.2:5000", []string{"junk, 203.0.113.9"}, "203.0.113.9"},
		{"empty entry", "10.0.0.2:5000", []string{"203.0.113.9,"}, "10.0.0.2"},
		{"no header from a proxy", "10.0.0.2:5000", nil, "10.0.0.2"},
		{"only proxies", "10.0.0.2:5000", []string{"10.0.0.3"}, "10.0.0.3"},
		{"a chain longer than the bound", "10.0.0.2:5000", []string{"203.0.113.9," + strings.Repeat("10.0.0.3,", maxForwardedHops) + "10.0.0.4"}, "10.0.0.3"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := clientAddr(r, proxies); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// FuzzForwardedClient: any X-Forwarded-For lines from a trusted proxy give
// an address, without a panic, and the result is the peer or one of the
// addresses the lines hold.
func FuzzForwardedClient(f *testing.F) {
	f.Add("203.0.113.9", "10.0.0.3")
	f.Add("1.2.3.4, 203.0.113.9", "")
	f.Add(",,,", "::1,fd00::2")
	f.Fuzz(func(t *testing.T, a, b string) {
		trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
		peer := netip.MustParseAddr("10.0.0.2")
		got := forwardedClient([]string{a, b}, peer, trusted)
		if got == peer {
			return
		}
		for _, f := range strings.Split(a+","+b, ",") {
			if x, err := netip.ParseAddr(strings.TrimSpace(f)); err == nil && x.Unmap() == got {
				return
			}
		}
		t.Fatalf("%q %q: %v is neither the peer nor in the lines", a, b, got)
	})
}
