package kms

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
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
// algorithm), then uvarint(len(context)) and the caller's context (the
// field layer's table/column/row binding), then the canonical encryption
// context. The encryption context is also bound by the KMS to the wrapped
// key, so neither can be changed without detection.
const (
	EnvelopeVersion = 0x81
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
	// MaxEntries bounds both caches (distinct encryption contexts for
	// sealing, unwrapped keys for opening); default 1,000.
	MaxEntries int
}

// DefaultCacheLimits are used for zero fields.
var DefaultCacheLimits = CacheLimits{MaxAge: 5 * time.Minute, MaxMessages: 100_000, MaxBytes: 1 << 30, MaxEntries: 1000}

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
	KMSCalls             uint64 // calls to the key service
	KMSErrors            uint64
	Evictions            uint64 // data keys retired by a limit or the cache bound
}

// Envelope seals values under KMS-protected data keys. It is safe for
// concurrent use.
type Envelope struct {
	ks     KeyService
	limits CacheLimits
	noCach bool

	mu   sync.Mutex
	seal map[string]*dataKey // by canonical encryption context
	open *expirable.LRU[string, cipher.AEAD]

	sealHits, sealMisses, openHits, openMisses, calls, errs, evictions atomic.Uint64
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
	l := opts.Limits
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
	e := &Envelope{ks: ks, limits: l, noCach: opts.NoCache, seal: map[string]*dataKey{}}
	e.open = expirable.NewLRU[string, cipher.AEAD](l.MaxEntries, func(string, cipher.AEAD) { e.evictions.Add(1) }, l.MaxAge)
	return e
}

// KeyService returns the underlying key service.
func (e *Envelope) KeyService() KeyService { return e.ks }

// Stats returns the counters.
func (e *Envelope) Stats() Stats {
	return Stats{SealHits: e.sealHits.Load(), SealMisses: e.sealMisses.Load(), OpenHits: e.openHits.Load(),
		OpenMisses: e.openMisses.Load(), KMSCalls: e.calls.Load(), KMSErrors: e.errs.Load(), Evictions: e.evictions.Load()}
}

// Seal encrypts plaintext under a data key for ec, bound to context (for
// example the field layer's table/column/row). A data key that could not
// be wrapped is never used.
func (e *Envelope) Seal(ctx context.Context, plaintext, context []byte, ec map[string]string) ([]byte, error) {
	cec := CanonicalContext(ec)
	k, err := e.sealKey(ctx, string(cec), ec, uint64(len(plaintext)))
	if err != nil {
		return nil, err
	}
	n := len(k.wrapped)
	out := make([]byte, 4+n, 4+n+nonceSize+len(plaintext)+tagSize)
	out[0] = EnvelopeVersion
	binary.BigEndian.PutUint16(out[1:3], uint16(n))
	copy(out[3:], k.wrapped)
	out[3+n] = algAES256GCM
	out = out[:4+n+nonceSize]
	rand.Read(out[4+n:])
	ad := associatedData(out[:4+n], context, cec)
	return k.aead.Seal(out, out[4+n:4+n+nonceSize], plaintext, ad), nil
}

func associatedData(header, context, cec []byte) []byte {
	ad := make([]byte, 0, len(header)+10+len(context)+len(cec))
	ad = append(ad, header...)
	ad = binary.AppendUvarint(ad, uint64(len(context)))
	ad = append(ad, context...)
	return append(ad, cec...)
}

// sealKey returns a cached data key within its limits, or a new one.
func (e *Envelope) sealKey(ctx context.Context, cec string, ec map[string]string, size uint64) (*dataKey, error) {
	if !e.noCach {
		e.mu.Lock()
		if k := e.seal[cec]; k != nil {
			if time.Since(k.created) < e.limits.MaxAge && k.messages < e.limits.MaxMessages && k.bytes+size <= e.limits.MaxBytes {
				k.messages++
				k.bytes += size
				e.mu.Unlock()
				e.sealHits.Add(1)
				return k, nil
			}
			delete(e.seal, cec)
			e.evictions.Add(1)
		}
		e.mu.Unlock()
	}
	e.sealMisses.Add(1)
	plain, wrapped, err := e.newDataKey(ctx, ec)
	if err != nil {
		return nil, err
	}
	if len(wrapped) == 0 || len(wrapped) > MaxWrappedKey {
		clear(plain)
		return nil, fmt.Errorf("kms: the service returned a wrapped key of %d bytes", len(wrapped))
	}
	a, err := gcm(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	k := &dataKey{aead: a, wrapped: wrapped, created: time.Now(), messages: 1, bytes: size}
	if !e.noCach {
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
		e.open.Add(openKey(wrapped, []byte(cec)), a)
	}
	return k, nil
}

func (e *Envelope) newDataKey(ctx context.Context, ec map[string]string) (plain, wrapped []byte, err error) {
	e.calls.Add(1)
	if g, ok := e.ks.(DataKeyGenerator); ok {
		plain, wrapped, err = g.GenerateDataKey(ctx, 32, ec)
	} else {
		plain = make([]byte, 32)
		rand.Read(plain)
		wrapped, err = e.ks.Encrypt(ctx, plain, ec)
	}
	if err != nil {
		e.errs.Add(1)
		clear(plain)
		return nil, nil, fmt.Errorf("kms: new data key from %s %s: %w", e.ks.Provider(), e.ks.KeyID(), err)
	}
	if len(plain) != 32 {
		return nil, nil, fmt.Errorf("kms: the service returned a %d-byte data key", len(plain))
	}
	return plain, wrapped, nil
}

func openKey(wrapped, cec []byte) string {
	h := sha256.New()
	h.Write(wrapped)
	h.Write([]byte{0})
	h.Write(cec)
	return string(h.Sum(nil))
}

// Open decrypts an envelope ciphertext sealed with the same context and
// encryption context.
func (e *Envelope) Open(ctx context.Context, ciphertext, context []byte, ec map[string]string) ([]byte, error) {
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
	wrapped := ciphertext[3 : 3+n]
	cec := CanonicalContext(ec)
	a, err := e.openKey(ctx, wrapped, cec, ec)
	if err != nil {
		return nil, err
	}
	ad := associatedData(ciphertext[:4+n], context, cec)
	pt, err := a.Open(nil, ciphertext[4+n:4+n+nonceSize], ciphertext[4+n+nonceSize:], ad)
	if err != nil {
		return nil, ErrAuthentication
	}
	return pt, nil
}

func (e *Envelope) openKey(ctx context.Context, wrapped, cec []byte, ec map[string]string) (cipher.AEAD, error) {
	key := openKey(wrapped, cec)
	if !e.noCach {
		if a, ok := e.open.Get(key); ok {
			e.openHits.Add(1)
			return a, nil
		}
	}
	e.openMisses.Add(1)
	e.calls.Add(1)
	plain, err := e.ks.Decrypt(ctx, wrapped, ec)
	if err != nil {
		e.errs.Add(1)
		return nil, fmt.Errorf("kms: unwrapping data key with %s %s: %w", e.ks.Provider(), e.ks.KeyID(), err)
	}
	a, err := gcm(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	if !e.noCach {
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
	return cipher.NewGCM(b)
}
