package chat

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
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
//
// A token names the integrity epoch it was signed in (the keyring's primary
// key then) and is MAC'd under that epoch's key: a token made with a copy
// of the keyring file from before a key was added, or signed in an epoch
// whose key was retired, is refused, and its browser counts per prefix
// until its next log-in. Tokens of the release before (MAC'd under a key
// derived from the keyring's root, which every copy of the file derives)
// are refused the same way. A token is signed over its account's
// normalised address, not its blind index, so that it outlives the
// rotation that re-keys the index (tokens signed over the index, before
// this release, are refused once: their browsers count per prefix until
// their next log-in).
type devices struct {
	kr     *keyring.Keyring
	cookie string // "__Host-device" (https) or "device" (local)
	secure bool
}

// deviceTTL is how long a device token lasts.
const deviceTTL = 180 * 24 * time.Hour

// deviceTagSize is the length of a token's truncated HMAC.
const deviceTagSize = 16

// devicePurpose names the tokens' integrity key.
const devicePurpose = "chat device token"

// A token is deviceVersion ‖ epoch (4 bytes, big-endian) ‖ random (16) ‖
// tag (deviceTagSize), in unpadded base64url.
const (
	deviceVersion = 2
	deviceRandom  = 16
	deviceSize    = 1 + 4 + deviceRandom + deviceTagSize
)

func newDevices(kr *keyring.Keyring, o *origins) (*devices, error) {
	if _, _, err := kr.IntegrityKey(devicePurpose); err != nil {
		return nil, fmt.Errorf("chat: device tokens: %w", err)
	}
	name := "device"
	if o.secure {
		name = "__Host-device"
	}
	return &devices{kr: kr, cookie: name, secure: o.secure}, nil
}

// tag is the HMAC, under key, of a token's header and random part for an
// account.
func tag(key []byte, account string, head []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(account))
	m.Write([]byte{0})
	m.Write(head)
	return m.Sum(nil)[:deviceTagSize]
}

// issue sets a new device token for account on the response, signed in
// the current epoch (none when the keyring has no primary key).
func (d *devices) issue(w http.ResponseWriter, account string) {
	epoch, key, err := d.kr.IntegrityKey(devicePurpose)
	if err != nil {
		return
	}
	b := make([]byte, 5, deviceSize)
	b[0] = deviceVersion
	binary.BigEndian.PutUint32(b[1:], uint32(epoch))
	b = append(b, make([]byte, deviceRandom)...)
	rand.Read(b[5:])
	v := base64.RawURLEncoding.EncodeToString(append(b, tag(key, account, b)...))
	http.SetCookie(w, &http.Cookie{Name: d.cookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: d.secure, MaxAge: int(deviceTTL.Seconds())})
}

// valid returns the request's device token if it is one issued for
// account in an epoch the keyring holds, compared in constant time. An
// epoch the loaded keyring lacks is refused without a re-read of the
// file, so that made-up tokens cost no I/O.
func (d *devices) valid(r *http.Request, account string) (string, bool) {
	c, err := r.Cookie(d.cookie)
	if err != nil || len(c.Value) > 64 {
		return "", false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c.Value)
	if err != nil || len(b) != deviceSize || b[0] != deviceVersion {
		return "", false
	}
	epoch := keyring.KeyID(binary.BigEndian.Uint32(b[1:5]))
	if _, ok := d.kr.Lookup(epoch); !ok {
		return "", false
	}
	key, err := d.kr.IntegrityKeyAt(epoch, devicePurpose)
	if err != nil || !hmac.Equal(b[5+deviceRandom:], tag(key, account, b[:5+deviceRandom])) {
		return "", false
	}
	return c.Value, true
}

// attemptKey is what failed log-ins of this request are counted under:
// the address (limited, its limitKey) with the browser's valid device
// token for the account (the normalised address, which device tokens are
// signed over), or with the client's prefix (an IPv4 /24, an IPv6 /64 of the
// connection's peer or, behind a trusted proxy, of the forwarded client).
func (s *server) attemptKey(r *http.Request, account, limited string) string {
	if token, ok := s.devices.valid(r, account); ok {
		return limited + "|device:" + token
	}
	return limited + "|prefix:" + clientPrefix(r, s.trusted)
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
