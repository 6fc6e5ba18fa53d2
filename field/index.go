package field

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wardlab/ward/keyring"
)

// Normalizer is a named normalisation of a blind index's values. The name
// and version go into the index's key (two indexes of one column that
// normalise differently never share a key) and into the ledger's record
// of the index, so that a job knows how to compute it again: a
// normaliser [ParseNormalizer] knows (nfc, fold, and their prefix-N
// forms) can be re-keyed by the CLI; an application's own can be re-keyed
// only by a job the application runs with its function.
type Normalizer struct {
	// Name names the normalisation: 1 to 64 of a-z 0-9 . _ : + -. Names
	// ParseNormalizer knows mean what it says; give an application's own
	// a name of its own, such as "app:phone".
	Name string
	// Version changes whenever Func changes what it returns for any
	// value: indexes computed before and after then differ in key as well.
	Version uint32
	// Func normalises a valid UTF-8 value.
	Func func(string) string
}

// The normalisers of package field, by name.
var (
	// NFC is [NormalizeNFC], version 1.
	NFC = Normalizer{Name: "nfc", Version: 1, Func: NormalizeNFC}
	// Fold is [NormalizeFold], version 1.
	Fold = Normalizer{Name: "fold", Version: 1, Func: NormalizeFold}
)

var normalizerName = regexp.MustCompile(`^[a-z0-9._:+-]{1,64}$`)

// maxPrefix bounds a prefix normaliser's length in runes.
const maxPrefix = 256

// Prefix returns the normaliser that keeps the first n runes (1 to 256)
// of base's output, named "<base>+prefix-<n>": an index of it finds
// values by their beginning, under a key of its own.
func Prefix(n int, base Normalizer) Normalizer {
	f := base.Func
	return Normalizer{Name: base.Name + "+prefix-" + strconv.Itoa(n), Version: base.Version, Func: func(s string) string {
		s = f(s)
		i, runes := 0, 0
		for i < len(s) && runes < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			runes++
		}
		return s[:i]
	}}
}

// ParseNormalizer returns the normaliser of package field a recorded name
// and version name: "nfc" or "fold", either followed by "+prefix-N".
func ParseNormalizer(name string, version uint32) (Normalizer, error) {
	base, prefix, hasPrefix := strings.Cut(name, "+prefix-")
	var n Normalizer
	switch base {
	case NFC.Name:
		n = NFC
	case Fold.Name:
		n = Fold
	default:
		return Normalizer{}, fmt.Errorf("field: normaliser %.70q is not one of package field's (nfc, fold, with +prefix-N): an application's own is re-keyed by a job the application runs", name)
	}
	if version != n.Version {
		return Normalizer{}, fmt.Errorf("field: normaliser %s version %d, this release knows version %d", base, version, n.Version)
	}
	if hasPrefix {
		k, err := strconv.Atoi(prefix)
		if err != nil || k < 1 || k > maxPrefix || strconv.Itoa(k) != prefix {
			return Normalizer{}, fmt.Errorf("field: normaliser %.70q: the prefix length is 1 to %d", name, maxPrefix)
		}
		n = Prefix(k, n)
	}
	return n, nil
}

func (n Normalizer) check() error {
	if !normalizerName.MatchString(n.Name) || n.Func == nil || n.Version == 0 {
		return fmt.Errorf("field: a blind index normaliser needs a name (1 to 64 of a-z 0-9 . _ : + -), a version from 1 and a function; got %.70q version %d", n.Name, n.Version)
	}
	if _, after, ok := strings.Cut(n.Name, "+prefix-"); ok {
		if k, err := strconv.Atoi(after); err != nil || k < 1 || k > maxPrefix {
			return fmt.Errorf("field: normaliser %.70q: the prefix length is 1 to %d", n.Name, maxPrefix)
		}
	}
	return nil
}

// IndexOptions configure a blind index v2 ([NewIndex]).
type IndexOptions struct {
	// Database is the database's ID (ledger.State.Database), which every
	// v2 index binds: the same value indexes differently in two databases
	// under one keyring. Required.
	Database string
	// Name tells apart the indexes of one column (a full one, a prefix
	// one); each has a key of its own. Default: the column's name.
	Name string
	// Normalizer is the index's normalisation. Default: [NFC].
	Normalizer Normalizer
	// Size is the digest's length in bytes, [MinIndexSize] to
	// [MaxIndexSize]; the stored form is 5 bytes longer. Default:
	// [DefaultIndexSize].
	Size int
	// Epoch is the integrity epoch whose key computes the index. 0: the
	// keyring's current one (its primary key). A ledger records each
	// index's epoch (ledger.Ledger.Index), which only a re-key changes.
	Epoch keyring.KeyID
}

// indexV2 is the first byte of a stored v2 index.
const indexV2 = 0x02

// ErrIndexForm means bytes are not a stored blind index v2.
var ErrIndexForm = errors.New("field: not a stored blind index v2")

// NewIndex returns the blind index v2 of table.column: keyed by an
// integrity epoch (FORMAT.md, "Integrity epochs"), so that a rotation
// and a re-key end what a copy of the keyring file from before can
// compute; a key of its own per index name, normaliser and size, so two
// indexes of one column cannot be joined; bound to the database; and
// stored as 0x02 ‖ epoch (4 bytes) ‖ digest, so a lookup and a job tell
// the epoch of each stored index. Compute and AppendCompute return the
// stored form: query with WHERE col_idx = Compute(search).
func NewIndex(kr *keyring.Keyring, table, column string, o IndexOptions) (*BlindIndex, error) {
	if o.Database == "" {
		return nil, errors.New("field: a blind index v2 needs the database's ID (ledger.State.Database)")
	}
	if table == "" || column == "" {
		return nil, errors.New("field: a blind index needs a table and a column")
	}
	if o.Name == "" {
		o.Name = column
	}
	if o.Normalizer.Name == "" && o.Normalizer.Func == nil {
		o.Normalizer = NFC
	}
	if o.Size == 0 {
		o.Size = DefaultIndexSize
	}
	if err := o.Normalizer.check(); err != nil {
		return nil, err
	}
	if o.Size < MinIndexSize || o.Size > MaxIndexSize {
		return nil, fmt.Errorf("field: blind index size %d out of range [%d, %d]", o.Size, MinIndexSize, MaxIndexSize)
	}
	if o.Epoch == 0 {
		o.Epoch = kr.Primary().ID
	}
	key, err := kr.IntegrityKeyAt(o.Epoch, IndexPurpose(table, column, o))
	if err != nil {
		return nil, fmt.Errorf("field: the key of blind index %s of %s.%s: %w", o.Name, table, column, err)
	}
	prefix := binary.BigEndian.AppendUint32([]byte{indexV2}, uint32(o.Epoch))
	header := append([]byte("ward blind index v2\x00"), prefix...)
	b := &BlindIndex{size: o.Size, normalize: o.Normalizer.Func, prefix: prefix, header: appendString(header, o.Database), epoch: o.Epoch}
	b.pool.New = func() any { return &indexState{h: hmac.New(sha256.New, key)} }
	return b, nil
}

// IndexPurpose is the integrity-key purpose of a blind index v2
// (FORMAT.md, "Blind index"): the table, column, index name, the
// normaliser's name and version, and the size.
func IndexPurpose(table, column string, o IndexOptions) string {
	p := appendString([]byte("blind-index v2\x00"), table)
	p = appendString(p, column)
	p = appendString(p, o.Name)
	p = appendString(p, o.Normalizer.Name)
	p = binary.AppendUvarint(p, uint64(o.Normalizer.Version))
	return string(binary.AppendUvarint(p, uint64(o.Size)))
}

// Epoch returns the integrity epoch a v2 index is computed under, and 0
// for a v1 index ([NewBlindIndex]).
func (b *BlindIndex) Epoch() keyring.KeyID { return b.epoch }

// IndexEpoch returns the integrity epoch a stored v2 index names, from
// its bytes alone (it authenticates nothing: an index is a digest, not a
// MAC a reader checks), or an error matching [ErrIndexForm].
func IndexEpoch(stored []byte) (keyring.KeyID, error) {
	if len(stored) < 5+MinIndexSize || len(stored) > 5+MaxIndexSize || stored[0] != indexV2 {
		return 0, fmt.Errorf("%w (%d bytes)", ErrIndexForm, len(stored))
	}
	epoch := keyring.KeyID(binary.BigEndian.Uint32(stored[1:5]))
	if epoch == 0 {
		return 0, fmt.Errorf("%w (epoch 0)", ErrIndexForm)
	}
	return epoch, nil
}
