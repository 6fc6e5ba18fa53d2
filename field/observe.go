package field

import (
	"encoding/binary"
	"errors"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/observe"
)

// report tells o of a seal or open of ct (the value sealed, or the value
// opened): its key and class from the header of a v3 or v4 value, and
// the kind of err.
func report(o observe.Observer, op observe.Op, ct []byte, err error) {
	v := observe.Value{Op: op, Class: "keyring"}
	if len(ct) >= 7 && (ct[0] == version3 || ct[0] == version4) {
		v.Key = binary.BigEndian.Uint32(ct[3:7])
		if ct[1] == 2 { // the header's key class: a subject's own key
			v.Class = "subject"
		}
	}
	if err != nil {
		v.ErrKind = valueErrKind(err)
	}
	o.Value(v)
}

// valueErrKind is the kind of a seal's or open's failure (observe.Value).
func valueErrKind(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{keyring.ErrWrongContext, "wrong-context"},
		{keyring.ErrAuthentication, "authentication"},
		{keyring.ErrUnknownKey, "unknown-key"},
		{keyring.ErrKeyDisabled, "unknown-key"},
		{keyring.ErrTruncated, "malformed"},
		{keyring.ErrMalformed, "malformed"},
		{keyring.ErrUnsupportedVersion, "malformed"},
		{ErrLegacyForm, "legacy-refused"},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return "other"
}
