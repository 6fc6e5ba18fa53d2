package chat

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// origins decides which browser origins may change state, and what the
// session cookie is called: it is built once from Config.Origins.
type origins struct {
	exact  map[string]bool // "https://chat.example.com", lowercased
	local  bool            // a development service on localhost, any port
	cookie string          // "__Host-session" (https) or "session" (local)
	secure bool            // the cookie's Secure attribute
	first  string          // the first configured origin: links in e-mails
}

// Cookie names: a deployment over https gets the __Host- prefix (Secure,
// no Domain, Path=/: a sibling subdomain cannot set it); a local
// development service, which browsers reach over plain http, gets
// "session". Each mode reads only its own name.
const (
	hostCookie  = "__Host-session"
	localCookie = "session"
)

// localHosts are the names a development service is reached at.
var localHosts = map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}

// newOrigins checks the configured origins: all https (a deployment, the
// __Host- cookie), or none (a local development service: http://localhost,
// 127.0.0.1 or [::1] on any port, the plain cookie). A plain-http origin
// on any other name is refused: the session cookie would cross the
// network in the clear.
func newOrigins(list []string) (*origins, error) {
	if len(list) == 0 {
		return &origins{local: true, cookie: localCookie}, nil
	}
	o := &origins{exact: map[string]bool{}, cookie: hostCookie, secure: true, first: strings.TrimSuffix(list[0], "/")}
	for _, s := range list {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("chat: origin %q is not scheme://host[:port]", s)
		}
		switch {
		case u.Scheme == "https":
		case u.Scheme == "http" && localHosts[u.Hostname()]:
			return nil, fmt.Errorf("chat: origin %q: leave Origins empty for a local development service", s)
		default:
			return nil, fmt.Errorf("chat: origin %q: only https origins (a session cookie must not cross the network in the clear)", s)
		}
		o.exact[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return o, nil
}

// allows reports whether a state-changing request may proceed: a
// browser's Sec-Fetch-Site must say same-origin, and its Origin must be
// one of the configured origins — not merely the Host the request was
// sent to, which DNS rebinding lets an attacker's page choose. Clients
// that send neither header (API clients) are not browsers and pass.
func (o *origins) allows(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if o.local {
		u, err := url.Parse(origin)
		return err == nil && u.Scheme == "http" && localHosts[u.Hostname()] && u.Path == ""
	}
	return o.exact[strings.ToLower(origin)]
}

// linkBase is the origin that links in e-mails point at: the first
// configured origin, or for a local development service the origin the
// request came from (already checked by allows) or http://localhost.
func (o *origins) linkBase(r *http.Request) string {
	if !o.local {
		return o.first
	}
	if origin := r.Header.Get("Origin"); origin != "" && o.allows(r) {
		return origin
	}
	if h := r.Host; h != "" {
		if u, err := url.Parse("http://" + h); err == nil && localHosts[u.Hostname()] {
			return "http://" + h
		}
	}
	return "http://localhost"
}

// session returns the request's session token from this mode's cookie.
func (o *origins) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(o.cookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// setSession sets (or, with maxAge < 0, clears) the session cookie.
func (o *origins) setSession(w http.ResponseWriter, token string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: o.cookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: o.secure, MaxAge: maxAge})
}
