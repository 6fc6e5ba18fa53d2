package chat

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

// TestOriginNotHost is the DNS-rebinding attack: a page on
// http://evil.example:PORT whose name now resolves to the service sends a
// request whose Origin equals its Host. The Origin must be one of the
// service's own origins, so it is refused (main compared Origin with Host
// and let it through). Configured https origins are matched exactly.
func TestOriginNotHost(t *testing.T) {
	local, err := newOrigins(nil)
	if err != nil {
		t.Fatal(err)
	}
	deployed, err := newOrigins([]string{"https://chat.example.com", "https://Chat.example.com:8443"})
	if err != nil {
		t.Fatal(err)
	}
	req := func(host, origin, site string) *http.Request {
		r, _ := http.NewRequest("POST", "http://"+host+"/api/login", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		return r
	}
	for _, tc := range []struct {
		o    *origins
		r    *http.Request
		want bool
	}{
		{local, req("evil.example:8080", "http://evil.example:8080", "same-origin"), false}, // rebinding
		{local, req("127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin"), true},
		{local, req("localhost:9999", "http://localhost:9999", ""), true},
		{local, req("localhost:8080", "https://localhost:8080", ""), false},
		{local, req("localhost:8080", "", ""), true}, // an API client
		{local, req("localhost:8080", "http://localhost:8080", "cross-site"), false},
		{deployed, req("chat.example.com", "https://chat.example.com", "same-origin"), true},
		{deployed, req("chat.example.com:8443", "https://chat.example.com:8443", ""), true},
		{deployed, req("evil.example", "https://evil.example", "same-origin"), false}, // Host-equal, not ours
		{deployed, req("chat.example.com", "http://chat.example.com", ""), false},
		{deployed, req("chat.example.com", "http://localhost:8080", ""), false},
	} {
		if got := tc.o.allows(tc.r); got != tc.want {
			t.Errorf("origins %v, Host %s, Origin %q: %v, want %v", tc.o.exact, tc.r.Host, tc.r.Header.Get("Origin"), got, tc.want)
		}
	}
	for _, bad := range []string{"http://chat.example.com", "http://localhost:8080", "https://chat.example.com/app", "chat.example.com", "https://u:p@chat.example.com"} {
		if _, err := newOrigins([]string{bad}); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
}

// TestSessionCookieModes: over https origins the session cookie is
// __Host-session and Secure, and a plain "session" cookie (set by a
// sibling subdomain, say) is not read; a local development service uses
// "session", and does not read "__Host-session".
func TestSessionCookieModes(t *testing.T) {
	for _, tc := range []struct {
		origins      []string
		name, ignore string
		secure       bool
	}{
		{nil, "session", "__Host-session", false},
		{[]string{"https://chat.example.com"}, "__Host-session", "session", true},
	} {
		dir := t.TempDir()
		ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"),
			KeyService: local.Generate(), Origins: tc.origins})
		c := ta.client(t)
		c.register("alice@example.com", "correct horse")
		if tc.origins != nil && !strings.Contains(outboxText(t, ta.app), tc.origins[0]+"/#verify=") {
			t.Fatalf("the link does not point at the configured origin: %s", outboxText(t, ta.app))
		}
		body := strings.NewReader(`{"email":"alice@example.com","password":"correct horse"}`)
		r, _ := http.NewRequest("POST", ta.ts.URL+"/api/login", body)
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var token string
		for _, ck := range resp.Cookies() {
			if ck.Name == tc.ignore {
				t.Fatalf("%v: cookie %s set", tc.origins, ck.Name)
			}
			if ck.Name == tc.name {
				token = ck.Value
				if ck.Secure != tc.secure || !ck.HttpOnly || ck.Path != "/" || ck.Domain != "" {
					t.Fatalf("%v: cookie %+v", tc.origins, ck)
				}
			}
		}
		if token == "" {
			t.Fatalf("%v: no %s cookie (%d)", tc.origins, tc.name, resp.StatusCode)
		}
		for name, want := range map[string]int{tc.name: 200, tc.ignore: 401} {
			r, _ := http.NewRequest("GET", ta.ts.URL+"/api/conversations", nil)
			r.AddCookie(&http.Cookie{Name: name, Value: token})
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("%v: the session under cookie %s: %d, want %d", tc.origins, name, resp.StatusCode, want)
			}
		}
	}
}
