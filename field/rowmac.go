package field

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
)

// RowMACSize is the size of a v1 row MAC (NewRowMAC's).
const RowMACSize = sha256.Size

// RowMACSizeV2 is the size of a v2 row MAC (NewRowMACFor's): a version
// byte, the 4-byte integrity epoch and the 32-byte HMAC. A column that
// stores row MACs as bytes (BLOB, BYTEA) holds both; one that stores their
// hex needs 74 characters (VARCHAR(74)) for v2.
const RowMACSizeV2 = 1 + 4 + sha256.Size

// rowMACV2 is the first byte of a v2 row MAC.
const rowMACV2 = 0x02

// ErrRowMAC means a row's MAC does not match its columns: a database
// writer changed one of them (re-pointed a session to another user,
// copied a password hash to another account, copied the row from another
// database) or the MAC itself, or forged it with a keyring file from an
// integrity epoch that ended.
var ErrRowMAC = errors.New("field: row MAC does not match: the row was altered")

// RowMAC authenticates the plain (unencrypted) columns of a row that must
// not be changed without the keyring: a session's user, a password hash
// and the account it belongs to. A database writer can still delete such
// rows, but not re-point them.
//
// A v2 MAC ([NewRowMACFor]) is bound to its database (the ledger's
// database ID) and computed under an integrity key of the epoch it names,
// the key that was primary when it was written (FORMAT.md, "Row MAC"): a
// row copied from another database, or forged with a keyring file from
// before the epoch, or of an epoch whose key was retired, does not verify.
// A v1 MAC ([NewRowMAC]) is bound to no database and keyed by the
// keyring's root, which never rotates: any keyring file ever written
// forges it. Store the MAC in a column beside the values.
type RowMAC struct {
	kr       *keyring.Keyring
	purpose  string
	database string
	gate     *fleetgate.Gate
	refuseV1 bool
	mark     string
	v1only   bool   // NewRowMAC's: v1 only
	v1       []byte // the v1 key (the root's)

	mu   sync.Mutex
	keys map[keyring.KeyID][]byte // integrity keys by epoch
}

// RowMACOptions configure [NewRowMACFor].
type RowMACOptions struct {
	// Database is the database's ID (ledger.State.Database), which every
	// v2 MAC binds. Required.
	Database string
	// Gate is the process's view of its fleet (WithForms). With one, Sum
	// writes v2 only once every registered process reads it (the form
	// fleetgate.IntegrityV2; v1 until then), and Verify refuses v1 MACs once
	// the database's ledger records that the table's rows were moved to v2
	// (RowMACMovedMark), which the gate learns within its refresh. Without
	// one, Sum writes v2 at once.
	Gate *fleetgate.Gate
	// RefuseV1 refuses v1 MACs from the start: a table whose every row was
	// written v2, or moved (ledger.Ledger.RowMAC sets it from the ledger).
	RefuseV1 bool
}

// RowMACMovedMark is the ledger mark saying that every row MAC of table
// is v2: v1 MACs of it are refused from then on (a rotation's re-MAC pass
// records it).
func RowMACMovedMark(table string) string { return "integrity:rowmac-v2:" + table }

// NewRowMAC returns the v1 MAC of the named columns of table, in order:
// bound to no database, keyed by the keyring's root.
//
// Deprecated: use NewRowMACFor (or ledger.Ledger.RowMAC), whose MACs are
// bound to their database and rotate with the keyring; NewRowMAC's can be
// forged with any copy of the keyring file ever written.
func NewRowMAC(kr *keyring.Keyring, table string, columns ...string) (*RowMAC, error) {
	m, err := newRowMAC(kr, table, columns)
	if err != nil {
		return nil, err
	}
	m.v1only = true
	return m, nil
}

// NewRowMACFor returns the MAC of the named columns of table, in order,
// bound to opts.Database: Sum writes v2 (see RowMACOptions.Gate), Verify
// accepts v2 under any epoch the keyring holds and, unless refused, v1.
func NewRowMACFor(kr *keyring.Keyring, table string, columns []string, opts RowMACOptions) (*RowMAC, error) {
	if opts.Database == "" {
		return nil, errors.New("field: a row MAC needs the database's ID (ledger.State.Database)")
	}
	m, err := newRowMAC(kr, table, columns)
	if err != nil {
		return nil, err
	}
	m.database, m.gate, m.refuseV1, m.mark = opts.Database, opts.Gate, opts.RefuseV1, RowMACMovedMark(table)
	m.gate.Declare(fleetgate.IntegrityV2)
	m.gate.Want(fleetgate.IntegrityV2)
	return m, nil
}

func newRowMAC(kr *keyring.Keyring, table string, columns []string) (*RowMAC, error) {
	if table == "" || len(columns) == 0 {
		return nil, errors.New("field: a row MAC needs a table and columns")
	}
	purpose := appendString([]byte("row-mac\x00"), table)
	purpose = binary.AppendUvarint(purpose, uint64(len(columns)))
	for _, c := range columns {
		purpose = appendString(purpose, c)
	}
	key, err := kr.Derive(string(purpose), 32)
	if err != nil {
		return nil, fmt.Errorf("field: deriving the row MAC key: %w", err)
	}
	return &RowMAC{kr: kr, purpose: string(purpose), v1: key, keys: map[keyring.KeyID][]byte{}}, nil
}

// Sum returns the MAC of values (see [RowKey.With] for the accepted types:
// integers and their decimal text are the same value): v2 under the
// current epoch, or v1 (NewRowMAC's, or while a gate keeps the fleet on v1).
func (m *RowMAC) Sum(values ...any) ([]byte, error) {
	msg, err := rowMACMessage(values)
	if err != nil {
		return nil, err
	}
	if m.v1only || !m.gate.Allows(fleetgate.IntegrityV2) {
		return hmacSum(m.v1, nil, msg), nil
	}
	epoch := m.kr.Primary().ID
	key, err := m.key(epoch)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint32([]byte{rowMACV2}, uint32(epoch))
	return hmacSum(key, appendString(nil, m.database), msg, out...), nil
}

// Verify checks tag against values in constant time. It returns
// [ErrRowMAC] if they do not match (or tag is a v1 MAC that is refused).
func (m *RowMAC) Verify(tag []byte, values ...any) error {
	_, err := m.verify(tag, values)
	return err
}

// Current reports whether tag is a valid MAC of values that needs no
// move: v2 under the current epoch (a v1 MAC of NewRowMAC's, which never
// moves, is current too). A re-MAC job writes Sum's for the rest.
func (m *RowMAC) Current(tag []byte, values ...any) (bool, error) {
	epoch, err := m.verify(tag, values)
	if err != nil {
		return false, err
	}
	return m.v1only || epoch == m.kr.Primary().ID, nil
}

// verify checks tag and returns its epoch (0 for v1).
func (m *RowMAC) verify(tag []byte, values []any) (keyring.KeyID, error) {
	msg, err := rowMACMessage(values)
	if err != nil {
		return 0, err
	}
	if len(tag) == RowMACSize {
		if !m.v1only && (m.refuseV1 || m.gate.Marked(m.mark)) {
			return 0, fmt.Errorf("%w (a v1 MAC, bound to no database: refused since the table's rows were moved to v2)", ErrRowMAC)
		}
		if !hmac.Equal(tag, hmacSum(m.v1, nil, msg)) {
			return 0, ErrRowMAC
		}
		return 0, nil
	}
	if m.v1only || len(tag) != RowMACSizeV2 || tag[0] != rowMACV2 {
		return 0, ErrRowMAC
	}
	epoch := keyring.KeyID(binary.BigEndian.Uint32(tag[1:5]))
	key, err := m.key(epoch)
	if err != nil {
		return 0, fmt.Errorf("%w (%v)", ErrRowMAC, err)
	}
	if !hmac.Equal(tag, hmacSum(key, appendString(nil, m.database), msg, tag[:5]...)) {
		return 0, ErrRowMAC
	}
	return epoch, nil
}

// key returns the integrity key of an epoch, cached (a key the keyring
// retires is dropped with the next miss: IntegrityKeyAt fails then).
func (m *RowMAC) key(epoch keyring.KeyID) ([]byte, error) {
	m.mu.Lock()
	k, ok := m.keys[epoch]
	m.mu.Unlock()
	if ok {
		if _, live := m.kr.Lookup(epoch); live {
			return k, nil
		}
	}
	k, err := (*keycore.Keyring)(m.kr).IntegrityKeyAt(epoch, m.purpose)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.keys, epoch)
		return nil, err
	}
	if len(m.keys) >= 64 {
		clear(m.keys)
	}
	m.keys[epoch] = k
	return k, nil
}

// RowMACEpoch returns the integrity epoch a stored v2 row MAC names, from
// its bytes alone (it authenticates nothing), and false for a v1 MAC or
// anything else.
func RowMACEpoch(tag []byte) (keyring.KeyID, bool) {
	if len(tag) != RowMACSizeV2 || tag[0] != rowMACV2 {
		return 0, false
	}
	return keyring.KeyID(binary.BigEndian.Uint32(tag[1:5])), true
}

// rowMACMessage encodes values as the MAC covers them: uvarint(count)
// and each as a bound value.
func rowMACMessage(values []any) ([]byte, error) {
	buf := binary.AppendUvarint(nil, uint64(len(values)))
	for i, v := range values {
		bv, err := boundText(v)
		if err != nil {
			return nil, fmt.Errorf("%w: value %d: %v", ErrBinding, i+1, err)
		}
		if bv.null {
			buf = binary.AppendUvarint(buf, 0)
			continue
		}
		buf = binary.AppendUvarint(buf, uint64(len(bv.text))+1)
		buf = append(buf, bv.text...)
	}
	return buf, nil
}

// hmacSum returns prefix ‖ HMAC-SHA-256(key, header ‖ msg); v2 MACs cover
// their own first five bytes (prefix) and the database (header).
func hmacSum(key, header, msg []byte, prefix ...byte) []byte {
	h := hmac.New(sha256.New, key)
	if len(prefix) > 0 {
		h.Write([]byte("ward row mac v2\x00"))
		h.Write(prefix)
		h.Write(header)
	}
	h.Write(msg)
	// A copy: prefix may be the start of the tag being verified, which
	// Sum would overwrite.
	return h.Sum(append(make([]byte, 0, len(prefix)+sha256.Size), prefix...))
}
