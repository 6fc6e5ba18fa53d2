package kms

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Envelope ciphertext v1, all integers big-endian:
//
//	offset  size  field
//	0       1     version, 0x81
//	1       2     n, length of the wrapped data key (1..MaxWrappedKey)
//	3       n     wrapped data key, as the KMS returned it
//	3+n     1     algorithm, 0x02 (AES-256-GCM)
//	4+n     12    nonce
//	16+n    ...   ciphertext followed by the 16-byte tag
//
// The AEAD's associated data is bytes 0..4+n (version, wrapped key,
// algorithm), then uvarint(len(additionalData)) and the caller's
// additional data (for example the field layer's table/column/row
// binding), then the canonical encryption context. The encryption context
// is also bound by the KMS to the wrapped key, so neither can be changed
// without detection.
//
// The text form is "e1:" followed by the unpadded base64url encoding of the
// binary form ([EncodeEnvelopeText], [DecodeEnvelopeText]).
const (
	// EnvelopeVersion is the first byte of an envelope ciphertext.
	EnvelopeVersion = 0x81
	// EnvelopeTextPrefix starts the text form of an envelope ciphertext.
	EnvelopeTextPrefix = "e1:"
	// MaxWrappedKey caps the wrapped key length read from a ciphertext;
	// AWS KMS blobs for 32-byte keys are under 200 bytes.
	MaxWrappedKey = 1024
	algAES256GCM  = 0x02
	nonceSize     = 12
	tagSize       = 16
)

// CacheLimits bound how long and how much one data key is used for
// sealing. The defaults are conservative: far below AES-GCM's random-nonce
// limit of 2^32 messages per key, and short enough that a revoked KMS
// permission takes effect within minutes.
type CacheLimits struct {
	MaxAge      time.Duration // default 5 minutes
	MaxMessages uint64        // default 100,000
	MaxBytes    uint64        // default 1 GiB
	// MaxEntries bounds each cache (distinct encryption contexts for
	// sealing, unwrapped keys and failed unwraps for opening); default
	// 1,000.
	MaxEntries int
	// FailureTTL is how long an unwrap the KMS refused is remembered, so
	// that replaying a forged envelope costs no further KMS call (default
	// 1 minute). Unavailability is never remembered.
	FailureTTL time.Duration
}

// DefaultCacheLimits are used for zero fields.
var DefaultCacheLimits = CacheLimits{MaxAge: 5 * time.Minute, MaxMessages: 100_000, MaxBytes: 1 << 30, MaxEntries: 1000, FailureTTL: time.Minute}

func (l CacheLimits) withDefaults() CacheLimits {
	d := DefaultCacheLimits
	if l.MaxAge <= 0 {
		l.MaxAge = d.MaxAge
	}
	if l.MaxMessages == 0 {
		l.MaxMessages = d.MaxMessages
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.FailureTTL <= 0 {
		l.FailureTTL = d.FailureTTL
	}
	return l
}

// EnvelopeOptions configure an Envelope.
type EnvelopeOptions struct {
	Limits CacheLimits
	// NoCache makes a new data key for every message (and unwraps every
	// time): the lab's "envelope without cache" case.
	NoCache bool
}

// Stats are an Envelope's counters.
type Stats struct {
	SealHits, SealMisses uint64 // seals with a cached / new data key
	OpenHits, OpenMisses uint64 // opens with a cached / unwrapped data key
	OpenRefused          uint64 // opens refused from the cache of failed unwraps
	KMSCalls             uint64 // calls to the key service
	KMSErrors            uint64
	Evictions            uint64 // data keys retired by a limit or the cache bound
}

// Envelope seals values under KMS-protected data keys. It is safe for
// concurrent use.
type Envelope struct {
	ks      KeyService
	limits  CacheLimits
	noCache bool

	mu     sync.Mutex
	seal   map[string]*dataKey // by canonical encryption context
	open   *expirable.LRU[string, cipher.AEAD]
	failed *expirable.LRU[string, error] // unwraps the KMS refused

	sealHits, sealMisses, openHits, openMisses, refused, calls, errs, evictions atomic.Uint64
}

type dataKey struct {
	aead     cipher.AEAD
	wrapped  []byte
	created  time.Time
	messages uint64
	bytes    uint64
}

// NewEnvelope returns an Envelope over ks.
func NewEnvelope(ks KeyService, opts EnvelopeOptions) *Envelope {
	l := opts.Limits.withDefaults()
	e := &Envelope{ks: ks, limits: l, noCache: opts.NoCache, seal: map[string]*dataKey{}}
	e.open = expirable.NewLRU[string, cipher.AEAD](l.MaxEntries, func(string, cipher.AEAD) { e.evictions.Add(1) }, l.MaxAge)
	e.failed = expirable.NewLRU[string, error](l.MaxEntries, nil, l.FailureTTL)
	return e
}

// Stats returns the counters.
func (e *Envelope) Stats() Stats {
	return Stats{SealHits: e.sealHits.Load(), SealMisses: e.sealMisses.Load(), OpenHits: e.openHits.Load(),
		OpenMisses: e.openMisses.Load(), OpenRefused: e.refused.Load(), KMSCalls: e.calls.Load(),
		KMSErrors: e.errs.Load(), Evictions: e.evictions.Load()}
}

// Seal encrypts plaintext under a data key for encryptionContext,
// binding additionalData (for example the field layer's table/column/row
// context), and returns the binary envelope. A data key that could not be
// wrapped is never used.
func (e *Envelope) Seal(ctx context.Context, plaintext, additionalData []byte, encryptionContext map[string]string) ([]byte, error) {
	cec := CanonicalContext(encryptionContext)
	k, err := e.sealKey(ctx, string(cec), encryptionContext, uint64(len(plaintext)))
	if err != nil {
		return nil, err
	}
	n := len(k.wrapped)
	out := make([]byte, 4+n, 4+n+nonceSize+len(plaintext)+tagSize)
	out[0] = EnvelopeVersion
	binary.BigEndian.PutUint16(out[1:3], uint16(n))
	copy(out[3:], k.wrapped)
	out[3+n] = algAES256GCM
	ad := associatedData(out[:4+n], additionalData, cec)
	return k.aead.Seal(out, nil, plaintext, ad), nil // nonce ‖ ciphertext ‖ tag
}

func associatedData(header, additionalData, cec []byte) []byte {
	ad := make([]byte, 0, len(header)+10+len(additionalData)+len(cec))
	ad = append(ad, header...)
	ad = binary.AppendUvarint(ad, uint64(len(additionalData)))
	ad = append(ad, additionalData...)
	return append(ad, cec...)
}

// sealKey returns a cached data key within its limits, or a new one.
func (e *Envelope) sealKey(ctx context.Context, cec string, encryptionContext map[string]string, size uint64) (*dataKey, error) {
	if k := e.cachedSealKey(cec, size); k != nil {
		return k, nil
	}
	e.sealMisses.Add(1)
	plain, wrapped, err := e.newDataKey(ctx, encryptionContext)
	if err != nil {
		return nil, err
	}
	if len(wrapped) == 0 || len(wrapped) > MaxWrappedKey {
		clear(plain)
		return nil, fmt.Errorf("kms: %v returned a wrapped key of %d bytes", e.ks.Key(), len(wrapped))
	}
	a, err := gcm(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	k := &dataKey{aead: a, wrapped: wrapped, created: time.Now(), messages: 1, bytes: size}
	if !e.noCache {
		e.mu.Lock()
		if len(e.seal) >= e.limits.MaxEntries {
			for c := range e.seal { // drop any one: contexts are few in practice
				delete(e.seal, c)
				e.evictions.Add(1)
				break
			}
		}
		e.seal[cec] = k
		e.mu.Unlock()
		// The key is also good for opening what it sealed.
		e.open.Add(openCacheKey(wrapped, []byte(cec)), a)
	}
	return k, nil
}

// cachedSealKey returns the cached key for cec and counts one more use,
// or nil when there is none within its limits.
func (e *Envelope) cachedSealKey(cec string, size uint64) *dataKey {
	if e.noCache {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.seal[cec]
	if k == nil {
		return nil
	}
	if time.Since(k.created) < e.limits.MaxAge && k.messages < e.limits.MaxMessages && k.bytes+size <= e.limits.MaxBytes {
		k.messages++
		k.bytes += size
		e.sealHits.Add(1)
		e.cacheHit()
		return k
	}
	delete(e.seal, cec)
	e.evictions.Add(1)
	return nil
}

func (e *Envelope) newDataKey(ctx context.Context, encryptionContext map[string]string) (plain, wrapped []byte, err error) {
	e.calls.Add(1)
	start := time.Now()
	if g, ok := e.ks.(DataKeyGenerator); ok {
		plain, wrapped, err = g.GenerateDataKey(ctx, 32, encryptionContext)
		Observe(e.ks, "GenerateDataKey", start, err)
	} else {
		plain = make([]byte, 32)
		rand.Read(plain)
		wrapped, err = e.ks.Encrypt(ctx, plain, encryptionContext)
		Observe(e.ks, "Encrypt", start, err)
	}
	if err != nil {
		e.errs.Add(1)
		clear(plain)
		return nil, nil, fmt.Errorf("kms: new data key: %w", err)
	}
	if len(plain) != 32 {
		return nil, nil, fmt.Errorf("kms: %v returned a %d-byte data key", e.ks.Key(), len(plain))
	}
	return plain, wrapped, nil
}

// openCacheKey is an injective digest of a wrapped key and a canonical
// encryption context: both are length-prefixed.
func openCacheKey(wrapped, cec []byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(wrapped)))])
	h.Write(wrapped)
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(cec)))])
	h.Write(cec)
	return string(h.Sum(nil))
}

// ParseEnvelope checks the structure of a binary envelope without any key
// and returns the wrapped data key it carries.
func ParseEnvelope(ciphertext []byte) (wrapped []byte, err error) {
	if len(ciphertext) < 3 || ciphertext[0] != EnvelopeVersion {
		return nil, fmt.Errorf("%w: not an envelope v1", ErrMalformed)
	}
	n := int(binary.BigEndian.Uint16(ciphertext[1:3]))
	if n == 0 || n > MaxWrappedKey {
		return nil, fmt.Errorf("%w: wrapped key length %d (cap %d)", ErrMalformed, n, MaxWrappedKey)
	}
	if len(ciphertext) < 4+n+nonceSize+tagSize {
		return nil, fmt.Errorf("%w: truncated", ErrMalformed)
	}
	if ciphertext[3+n] != algAES256GCM {
		return nil, fmt.Errorf("%w: unknown algorithm %#x", ErrMalformed, ciphertext[3+n])
	}
	return ciphertext[3 : 3+n], nil
}

// Open decrypts an envelope sealed with the same additional data and
// encryption context.
func (e *Envelope) Open(ctx context.Context, ciphertext, additionalData []byte, encryptionContext map[string]string) ([]byte, error) {
	wrapped, err := ParseEnvelope(ciphertext)
	if err != nil {
		return nil, err
	}
	n := len(wrapped)
	cec := CanonicalContext(encryptionContext)
	a, err := e.openKey(ctx, wrapped, cec, encryptionContext)
	if err != nil {
		return nil, err
	}
	ad := associatedData(ciphertext[:4+n], additionalData, cec)
	pt, err := a.Open(nil, nil, ciphertext[4+n:], ad)
	if err != nil {
		return nil, ErrAuthentication
	}
	return pt, nil
}

func (e *Envelope) openKey(ctx context.Context, wrapped, cec []byte, encryptionContext map[string]string) (cipher.AEAD, error) {
	key := openCacheKey(wrapped, cec)
	if !e.noCache {
		if a, ok := e.open.Get(key); ok {
			e.openHits.Add(1)
			e.cacheHit()
			return a, nil
		}
		if err, ok := e.failed.Get(key); ok {
			e.refused.Add(1)
			return nil, err
		}
	}
	e.openMisses.Add(1)
	e.calls.Add(1)
	start := time.Now()
	plain, err := e.ks.Decrypt(ctx, wrapped, encryptionContext)
	Observe(e.ks, "Decrypt", start, err)
	if err != nil {
		e.errs.Add(1)
		err = fmt.Errorf("kms: unwrapping data key: %w", err)
		if !e.noCache && !Transient(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			e.failed.Add(key, err)
		}
		return nil, err
	}
	a, err := gcm(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	if !e.noCache {
		e.open.Add(key, a)
	}
	return a, nil
}

func gcm(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("kms: data key of %d bytes", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	// The AEAD draws its own nonces and writes them before the ciphertext
	// (the envelope's layout since v1), as the FIPS 140-3 module requires.
	return cipher.NewGCMWithRandomNonce(b)
}

// EncodeEnvelopeText returns the text form of a binary envelope: "e1:" and
// unpadded base64url.
func EncodeEnvelopeText(ciphertext []byte) string {
	return EnvelopeTextPrefix + base64.RawURLEncoding.EncodeToString(ciphertext)
}

// DecodeEnvelopeText parses the text form back to the binary form.
func DecodeEnvelopeText(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), EnvelopeTextPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: text form must start with %q", ErrMalformed, EnvelopeTextPrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: bad base64url", ErrMalformed)
	}
	if _, err := ParseEnvelope(b); err != nil {
		return nil, err
	}
	return b, nil
}
