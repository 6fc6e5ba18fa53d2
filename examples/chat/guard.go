package chat

import (
	"container/list"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound what clients can make the service do. Zero fields take
// DefaultLimits.
type Limits struct {
	// LoginFailures is how many failed log-ins an account may have in
	// LoginWindow from one browser holding a device token, or from one
	// client prefix (an IPv4 /24, an IPv6 /64) for clients without one,
	// before further attempts from there are refused (429) without
	// hashing; the account is the canonical address (the blind index:
	// look-alike spellings are one account), and attempts are reserved
	// before the password is hashed. Guessers elsewhere cannot lock the
	// owner out (device.go).
	LoginFailures int
	LoginWindow   time.Duration
	// AccountEntries bounds the accounts tracked (least recently used
	// evicted first; never reset wholesale).
	AccountEntries int
	// LoginPerMinute is a token bucket per client address and
	// SignupPerHour one per client prefix (an IPv4 /24, an IPv6 /64),
	// checked before any hashing; SignupsPerMinute is a budget for all
	// sign-ups together, whose refusal says it is the service's.
	LoginPerMinute, SignupPerHour, SignupsPerMinute int
	// ResetsPerHour bounds password-reset mails per e-mail address
	// (whether or not it has an account, so the refusal reveals nothing),
	// and ResetsPerMinute all reset requests together: a reset mails the
	// address, so neither one address nor the mail service can be flooded
	// from many networks.
	ResetsPerHour, ResetsPerMinute int
	// AddressEntries bounds the client addresses tracked.
	AddressEntries int
	// MaxConns caps connections in total and MaxConnsPerAddress per
	// client prefix (an IPv4 /24, an IPv6 /64, of the connection's
	// address, not a forwarded one). At a cap, the oldest idle keep-alive
	// connection is closed to admit a new client.
	MaxConns, MaxConnsPerAddress int
	// SessionTTL is how long a session lasts.
	SessionTTL time.Duration
}

// DefaultLimits are used for zero fields.
var DefaultLimits = Limits{
	LoginFailures: 5, LoginWindow: time.Minute, AccountEntries: 100_000,
	LoginPerMinute: 20, SignupPerHour: 10, SignupsPerMinute: 60, AddressEntries: 100_000,
	ResetsPerHour: 3, ResetsPerMinute: 30,
	MaxConns: 8192, MaxConnsPerAddress: 64, SessionTTL: 24 * time.Hour,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	l.LoginFailures = pick(l.LoginFailures, d.LoginFailures)
	l.AccountEntries = pick(l.AccountEntries, d.AccountEntries)
	l.LoginPerMinute = pick(l.LoginPerMinute, d.LoginPerMinute)
	l.SignupPerHour = pick(l.SignupPerHour, d.SignupPerHour)
	l.SignupsPerMinute = pick(l.SignupsPerMinute, d.SignupsPerMinute)
	l.ResetsPerHour = pick(l.ResetsPerHour, d.ResetsPerHour)
	l.ResetsPerMinute = pick(l.ResetsPerMinute, d.ResetsPerMinute)
	l.AddressEntries = pick(l.AddressEntries, d.AddressEntries)
	l.MaxConns = pick(l.MaxConns, d.MaxConns)
	l.MaxConnsPerAddress = pick(l.MaxConnsPerAddress, d.MaxConnsPerAddress)
	if l.LoginWindow <= 0 {
		l.LoginWindow = d.LoginWindow
	}
	if l.SessionTTL <= 0 {
		l.SessionTTL = d.SessionTTL
	}
	return l
}

// lru is a bounded map that evicts its least recently used entry.
type lru[V any] struct {
	max   int
	order *list.List // front: most recent; values are *entry[V]
	byKey map[string]*list.Element
}

type entry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the value for key, creating it with mk if absent.
func (c *lru[V]) get(key string, mk func() V) V {
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[V]).val
	}
	if c.order.Len() >= c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*entry[V]).key)
	}
	v := mk()
	c.byKey[key] = c.order.PushFront(&entry[V]{key, v})
	return v
}

func (c *lru[V]) remove(key string) {
	if e, ok := c.byKey[key]; ok {
		c.order.Remove(e)
		delete(c.byKey, key)
	}
}

// attempts counts log-in attempts per account: failures in the window,
// plus attempts in flight, which are reserved before the password is
// hashed so that a burst of concurrent guesses cannot all pass the check.
type attempts struct {
	mu       sync.Mutex
	max      int
	window   time.Duration
	accounts *lru[*account]
}

type account struct {
	fails    []time.Time
	inFlight int
}

func newAttempts(l Limits) *attempts {
	return &attempts{max: l.LoginFailures, window: l.LoginWindow, accounts: newLRU[*account](l.AccountEntries)}
}

// reserve takes one attempt for key, or reports that the account has
// none left.
func (a *attempts) reserve(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc := a.accounts.get(key, func() *account { return &account{} })
	cut := now.Add(-a.window)
	i := 0
	for i < len(acc.fails) && acc.fails[i].Before(cut) {
		i++
	}
	acc.fails = acc.fails[i:]
	if len(acc.fails)+acc.inFlight >= a.max {
		return false
	}
	acc.inFlight++
	return true
}

// settle ends a reserved attempt: a failure is counted, a success clears
// the account.
func (a *attempts) settle(key string, ok bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc := a.accounts.get(key, func() *account { return &account{inFlight: 1} })
	acc.inFlight = max(0, acc.inFlight-1)
	if ok {
		a.accounts.remove(key)
		return
	}
	acc.fails = append(acc.fails, now)
}

// buckets are token buckets per client address.
type buckets struct {
	mu    sync.Mutex
	rate  rate.Limit
	burst int
	byIP  *lru[*rate.Limiter]
}

func newBuckets(perInterval int, interval time.Duration, entries int) *buckets {
	return &buckets{rate: rate.Limit(float64(perInterval) / interval.Seconds()), burst: perInterval, byIP: newLRU[*rate.Limiter](entries)}
}

func (b *buckets) allow(addr string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byIP.get(addr, func() *rate.Limiter { return rate.NewLimiter(b.rate, b.burst) }).Allow()
}

// maxForwardedHops bounds how many X-Forwarded-For entries clientAddr
// reads, from the end: a chain of more trusted proxies than this counts as
// the last one read.
const maxForwardedHops = 32

// clientAddr is the address a request is limited by: the connection's
// peer, or, when that peer is a trusted proxy, the last address in
// X-Forwarded-For that is not itself a trusted proxy. Every
// X-Forwarded-For line counts, in order, as one list: a proxy that adds a
// line of its own (HAProxy's option forwardfor) instead of appending to
// the client's is read from its line, not from the line the client sent.
// IPv6 clients are counted per /64.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	peer := peerAddr(r.RemoteAddr)
	if isTrusted(peer, trusted) {
		peer = forwardedClient(r.Header.Values("X-Forwarded-For"), peer, trusted)
	}
	if peer.Is6() {
		p, _ := peer.Prefix(64)
		return p.String()
	}
	return peer.String()
}

// forwardedClient walks the X-Forwarded-For lines from their last entry
// back, past trusted proxies, and returns the first address that is not
// one; an entry that is not an address ends the walk at the hop before it.
func forwardedClient(lines []string, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			if hops++; hops > maxForwardedHops {
				return peer
			}
			j := strings.LastIndexByte(rest, ',')
			a, err := netip.ParseAddr(strings.TrimSpace(rest[j+1:]))
			if err != nil {
				return peer
			}
			if peer = a.Unmap(); !isTrusted(peer, trusted) {
				return peer
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return peer
}

func peerAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return ap.Addr().Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// secure adds the security headers to every response and refuses
// cross-site and non-JSON state-changing requests (log-in CSRF): a POST
// must be application/json, and a browser's Origin and Sec-Fetch-Site must
// say it comes from one of the service's origins.
func secure(next http.Handler, o *origins) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			h.Set("Cache-Control", "no-store")
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
				fail(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
				return
			}
			if !o.allows(r) {
				fail(w, http.StatusForbidden, "cross-site request refused")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
