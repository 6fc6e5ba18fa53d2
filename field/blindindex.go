package field

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/wardlab/ward/keyring"
)

// Blind index sizes, in bytes.
const (
	// DefaultIndexSize keeps false positives negligible (2^-128 per pair).
	DefaultIndexSize = 16
	// MinIndexSize is the shortest index allowed: 2^32 buckets.
	MinIndexSize = 4
	// MaxIndexSize is a full HMAC-SHA-256 output.
	MaxIndexSize = 32
)

// BlindIndex computes a keyed, deterministic digest of a column's
// normalised plaintext so that equality search runs without decryption:
// store Compute(value) in a separate indexed column and query with
// WHERE col_idx = Compute(search).
//
// The digest is HMAC-SHA-256 under a per-column key derived from the
// keyring ([keyring.Keyring.Derive]), truncated to the index size. It does
// not change when data keys rotate.
//
// What it leaks: anyone who reads the database learns which rows hold
// equal values (after normalisation) and how often each value occurs, and
// can confirm a guess only with the key. Shorter indexes leak less: with
// an index of b bits and n distinct values, about n²/2^(b+1) pairs of
// different values collide, so results must be filtered after decryption,
// and equal digests no longer prove equal values. Choose the length from
// the number of distinct values: 16 bytes (the default) when the index
// must be exact; 4–8 bytes when the column has few distinct values
// (say, under 2^16) whose frequencies should be blurred, at the cost of
// decrypting a few false positives per query.
//
// NewBlindIndex makes the v1 index, keyed by the keyring's root, which
// never rotates; [NewIndex] makes the v2 index, for new columns.
type BlindIndex struct {
	size      int
	normalize func(string) string
	pool      sync.Pool // of *indexState keyed with the column key
	// v2 only: the stored form's first bytes (version, epoch), what the
	// digest covers before the value (its label, prefix and database),
	// and the epoch.
	prefix, header []byte
	epoch          keyring.KeyID
}

// indexState is a keyed HMAC with a scratch buffer, pooled so that Compute
// allocates only its result.
type indexState struct {
	h   hash.Hash
	buf []byte
}

// IndexOption configures a BlindIndex.
type IndexOption func(*BlindIndex)

// WithIndexSize sets the truncated length in bytes (MinIndexSize to
// MaxIndexSize).
func WithIndexSize(n int) IndexOption { return func(b *BlindIndex) { b.size = n } }

// WithNormalizer replaces the default normalisation ([NormalizeNFC]).
func WithNormalizer(f func(string) string) IndexOption {
	return func(b *BlindIndex) { b.normalize = f }
}

// NormalizeNFC puts the value in Unicode normalisation form C, so that
// canonically equivalent strings (a precomposed "é" and "e" + U+0301)
// index equally. It is the default.
func NormalizeNFC(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	return norm.NFC.String(s)
}

var folder = cases.Fold()

// NormalizeFold trims surrounding white space, applies compatibility
// normalisation (NFKC) and Unicode case folding: "  Alice@Example.COM "
// and "alice@example.com" index equally. Use it for e-mail addresses,
// user names and tags.
func NormalizeFold(s string) string {
	s = strings.TrimSpace(s)
	if !norm.NFKC.IsNormalString(s) {
		s = norm.NFKC.String(s)
	}
	return folder.String(s)
}

// NewBlindIndex returns the v1 blind index of table.column under kr: one
// key per column from the keyring's root, so every copy of the keyring
// file ever written computes it, and two indexes of one column share it.
// For a new index use [NewIndex] (or ledger.Ledger.Index), whose key
// rotates with the keyring and is its own per index.
func NewBlindIndex(kr *keyring.Keyring, table, column string, opts ...IndexOption) (*BlindIndex, error) {
	b := &BlindIndex{size: DefaultIndexSize, normalize: NormalizeNFC}
	for _, o := range opts {
		o(b)
	}
	if b.size < MinIndexSize || b.size > MaxIndexSize {
		return nil, fmt.Errorf("field: blind index size %d out of range [%d, %d]", b.size, MinIndexSize, MaxIndexSize)
	}
	purpose := binary.AppendUvarint([]byte("blind-index\x00"), uint64(len(table)))
	purpose = append(purpose, table...)
	purpose = binary.AppendUvarint(purpose, uint64(len(column)))
	purpose = append(purpose, column...)
	key, err := kr.Derive(string(purpose), 32)
	if err != nil {
		return nil, fmt.Errorf("field: deriving blind index key: %w", err)
	}
	b.pool.New = func() any { return &indexState{h: hmac.New(sha256.New, key)} }
	return b, nil
}

// Compute returns the index of value. Invalid UTF-8 is indexed as given,
// without normalisation.
func (b *BlindIndex) Compute(value string) []byte {
	return b.AppendCompute(make([]byte, 0, len(b.prefix)+sha256.Size), value)
}

// AppendCompute appends the index of value to dst (a v2 index in its
// stored form, version and epoch first).
func (b *BlindIndex) AppendCompute(dst []byte, value string) []byte {
	if utf8.ValidString(value) {
		value = b.normalize(value)
	}
	st := b.pool.Get().(*indexState)
	st.h.Reset()
	if b.header != nil { // v2
		dst = append(dst, b.prefix...)
		st.h.Write(b.header)
	}
	st.buf = append(st.buf[:0], value...)
	st.h.Write(st.buf)
	clear(st.buf) // the plaintext must not linger in the pool
	n := len(dst)
	dst = st.h.Sum(dst)
	b.pool.Put(st)
	return dst[:n+b.size]
}
