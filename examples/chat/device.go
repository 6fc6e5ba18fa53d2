package chat

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/netip"
	"time"

	"github.com/wardlab/ward/keyring"
)

// Device tokens let the real user in while guessers elsewhere are held
// back. After a successful log-in the browser receives a token signed for
// that account; failed log-ins are then counted per (account, device
// token) for a browser that shows a valid one, and per (account, client
// prefix) for every other client. A guesser who fails from many prefixes
// exhausts only the (account, prefix) pairs it used: the account's owner
// logs in at once from a browser that holds a token, and from a new
// browser on any prefix the guesser has not used.
type devices struct {
	key    []byte // HMAC key, derived from the keyring
	cookie string // "__Host-device" (https) or "device" (local)
	secure bool
}

// deviceTTL is how long a device token lasts.
const deviceTTL = 180 * 24 * time.Hour

// deviceTagSize is the length of a token's truncated HMAC.
const deviceTagSize = 16

func newDevices(kr *keyring.Keyring, o *origins) (*devices, error) {
	k, err := kr.Derive("chat device token", 32)
	if err != nil {
		return nil, err
	}
	name := "device"
	if o.secure {
		name = "__Host-device"
	}
	return &devices{key: k, cookie: name, secure: o.secure}, nil
}

// tag is the HMAC of a token's random part for an account (its blind
// index key).
func (d *devices) tag(account string, random []byte) []byte {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte(account))
	m.Write([]byte{0})
	m.Write(random)
	return m.Sum(nil)[:deviceTagSize]
}

// issue sets a new device token for account on the response.
func (d *devices) issue(w http.ResponseWriter, account string) {
	random := make([]byte, 16)
	rand.Read(random)
	v := base64.RawURLEncoding.EncodeToString(append(random, d.tag(account, random)...))
	http.SetCookie(w, &http.Cookie{Name: d.cookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: d.secure, MaxAge: int(deviceTTL.Seconds())})
}

// valid returns the request's device token if it is one issued for
// account, compared in constant time.
func (d *devices) valid(r *http.Request, account string) (string, bool) {
	c, err := r.Cookie(d.cookie)
	if err != nil || len(c.Value) > 64 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(b) != 16+deviceTagSize {
		return "", false
	}
	if !hmac.Equal(b[16:], d.tag(account, b[:16])) {
		return "", false
	}
	return c.Value, true
}

// attemptKey is what failed log-ins of this request are counted under:
// the account with the browser's valid device token, or the account with
// the client's prefix (an IPv4 /24, an IPv6 /64 of the connection's peer
// or, behind a trusted proxy, of the forwarded client).
func (s *server) attemptKey(r *http.Request, account string) string {
	if token, ok := s.devices.valid(r, account); ok {
		return account + "|device:" + token
	}
	return account + "|prefix:" + clientPrefix(r, s.trusted)
}

// clientPrefix is the /24 (IPv4) or /64 (IPv6) of the client address.
func clientPrefix(r *http.Request, trusted []netip.Prefix) string {
	a, err := netip.ParseAddr(clientAddr(r, trusted))
	if err != nil {
		return clientAddr(r, trusted) // already a /64
	}
	bits := 24
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p.String()
}
