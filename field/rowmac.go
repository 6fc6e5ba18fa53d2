package field

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wardlab/ward/keyring"
)

// RowMACSize is the size of a row MAC.
const RowMACSize = sha256.Size

// ErrRowMAC means a row's MAC does not match its columns: a database
// writer changed one of them (re-pointed a session to another user,
// copied a password hash to another account) or the MAC itself.
var ErrRowMAC = errors.New("field: row MAC does not match: the row was altered")

// RowMAC authenticates the plain (unencrypted) columns of a row that must
// not be changed without the keyring: a session's user, a password hash
// and the account it belongs to. A database writer can still delete such
// rows, but not re-point them. The MAC is HMAC-SHA-256 under a key derived
// from the keyring ([keyring.Keyring.Derive]) for the table and the
// columns, over their values in order; it does not change when data keys
// rotate. Store it in a column beside the values.
type RowMAC struct {
	key []byte
}

// NewRowMAC returns the MAC of the named columns of table, in order.
func NewRowMAC(kr *keyring.Keyring, table string, columns ...string) (*RowMAC, error) {
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
	return &RowMAC{key: key}, nil
}

// Sum returns the MAC of values (see [RowKey.With] for the accepted types:
// integers and their decimal text are the same value).
func (m *RowMAC) Sum(values ...any) ([]byte, error) {
	h := hmac.New(sha256.New, m.key)
	var buf []byte
	buf = binary.AppendUvarint(buf, uint64(len(values)))
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
	h.Write(buf)
	return h.Sum(nil), nil
}

// Verify checks tag against values in constant time. It returns
// [ErrRowMAC] if they do not match.
func (m *RowMAC) Verify(tag []byte, values ...any) error {
	want, err := m.Sum(values...)
	if err != nil {
		return err
	}
	if !hmac.Equal(tag, want) {
		return ErrRowMAC
	}
	return nil
}
