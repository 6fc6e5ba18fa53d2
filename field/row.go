package field

import (
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// RowKey identifies a row in a ciphertext's context: the primary key, and
// for a column declared with [Bind], the values of the bound columns.
// Integer and string keys with the same decimal text are the same RowKey,
// so RowInt(42) opens what RowString("42") sealed; bound values follow the
// same rule (FORMAT.md, "Field context v3").
type RowKey struct {
	// A RowKey is not comparable, as before its bound values moved behind
	// a pointer: == would compare the pointer, not the values. (First:
	// a trailing zero-size field would pad the struct.)
	_     [0]func()
	s     string
	n     int64
	isInt bool
	// with holds the bound values With gave, nil without: a row key is
	// passed by value on every seal and open, and small enough to travel
	// in registers only if the rarer parts are behind one pointer.
	with *bound
}

// bound are the bound values of a row key.
type bound struct {
	values []boundValue // canonically encoded (v3)
	raw    []any        // as given, for values sealed before v3
	err    error        // a bound value outside the closed set
}

// bound returns the row key's bound values, canonically encoded (none
// without With).
func (r *RowKey) bound() []boundValue {
	if r.with == nil {
		return nil
	}
	return r.with.values
}

// raw returns the bound values as With was given them.
func (r *RowKey) raw() []any {
	if r.with == nil {
		return nil
	}
	return r.with.raw
}

// boundValue is a bound column's value as text; null marks SQL NULL.
type boundValue struct {
	text string
	null bool
}

// RowInt returns the RowKey of an integer primary key.
func RowInt(n int64) RowKey { return RowKey{n: n, isInt: true} }

// RowString returns the RowKey of a text primary key.
func RowString(s string) RowKey { return RowKey{s: s} }

// With returns the row key with the values of the column's bound columns,
// in the order [Bind] declared them. The values are a closed set, each
// with one encoding whatever type the database returns it as: nil (SQL
// NULL), strings and []byte, integers of any kind (as decimal text), bools
// (as 1 or 0), time.Time (Unix microseconds in UTC), 16-byte arrays such as
// UUID types (lowercase hyphenated text), non-nil pointers to these, and a
// driver.Valuer whose Value is one of these. Anything else — a type that is
// only a fmt.Stringer, a float — is recorded as [ErrBinding], which Seal
// and Open return.
func (r RowKey) With(values ...any) RowKey {
	out := r
	b := &bound{raw: values, values: make([]boundValue, 0, len(values))}
	for i, v := range values {
		bv, err := boundText(v)
		if err != nil && b.err == nil {
			b.err = fmt.Errorf("%w: bound value %d: %v", ErrBinding, i+1, err)
		}
		b.values = append(b.values, bv)
	}
	out.with = b
	return out
}

// maxPointerDepth bounds how many pointers boundText follows.
const maxPointerDepth = 4

// boundText returns a bound value's canonical v3 encoding.
func boundText(v any) (boundValue, error) {
	for depth := 0; ; depth++ {
		if _, ok := v.(driver.Valuer); ok {
			dv, null, err := valuerValue(v)
			if null || err != nil {
				return boundValue{null: null}, err
			}
			if _, again := dv.(driver.Valuer); again {
				return boundValue{}, fmt.Errorf("%T.Value returned another Valuer", v)
			}
			v = dv
		}
		switch x := v.(type) {
		case nil:
			return boundValue{null: true}, nil
		case string:
			return boundValue{text: x}, nil
		case []byte:
			return boundValue{text: string(x)}, nil
		case bool:
			if x {
				return boundValue{text: "1"}, nil
			}
			return boundValue{text: "0"}, nil
		case time.Time:
			return boundValue{text: strconv.FormatInt(x.UnixMicro(), 10)}, nil
		}
		rv := reflect.ValueOf(v)
		if text, ok := integerText(rv); ok {
			return boundValue{text: text}, nil
		}
		switch rv.Kind() {
		case reflect.Bool:
			return boundText(rv.Bool())
		case reflect.String:
			return boundValue{text: rv.String()}, nil
		case reflect.Array:
			if rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
				var u [16]byte
				reflect.Copy(reflect.ValueOf(u[:]), rv)
				return boundValue{text: uuidText(u)}, nil
			}
		case reflect.Pointer:
			if rv.IsNil() {
				return boundValue{null: true}, nil
			}
			if depth < maxPointerDepth {
				v = rv.Elem().Interface()
				continue
			}
		}
		return boundValue{}, fmt.Errorf("unsupported type %T (FORMAT.md lists the bound-value types)", v)
	}
}

// uuidText is the lowercase hyphenated form of a UUID.
func uuidText(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// boundTextV2 is how v2 (read only) encoded a bound value: it also took
// any fmt.Stringer, whose text may not survive a database round trip (a
// time.Time's String() carries the monotonic clock reading).
func boundTextV2(v any) (boundValue, error) {
	if _, ok := v.(driver.Valuer); ok {
		dv, null, err := valuerValue(v)
		if null || err != nil {
			return boundValue{null: null}, err
		}
		v = dv
	}
	switch x := v.(type) {
	case nil:
		return boundValue{null: true}, nil
	case string:
		return boundValue{text: x}, nil
	case []byte:
		return boundValue{text: string(x)}, nil
	case bool:
		return boundValue{text: strconv.FormatBool(x)}, nil
	case fmt.Stringer:
		return boundValue{text: x.String()}, nil
	}
	if text, ok := integerText(reflect.ValueOf(v)); ok {
		return boundValue{text: text}, nil
	}
	return boundValue{}, fmt.Errorf("unsupported type %T", v)
}

// valuerValue calls v's Value method; a nil pointer receiver is NULL
// rather than a call that might panic. v must implement driver.Valuer.
func valuerValue(v any) (value any, null bool, err error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, true, nil
	}
	value, err = v.(driver.Valuer).Value()
	return value, false, err
}

// integerText is the decimal text of a signed or unsigned integer kind;
// ok is false for every other kind.
func integerText(rv reflect.Value) (text string, ok bool) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true
	}
	return "", false
}

// RowOf returns the RowKey of a primary-key value as an application's
// model or a database driver holds it: integers of any kind, strings
// (named string types included), []byte, and 16-byte arrays such as UUID
// types (as their lowercase hyphenated text, which is how PostgreSQL
// returns a uuid). Anything else is an error.
func RowOf(v any) (RowKey, error) {
	switch x := v.(type) {
	case string:
		return RowString(x), nil
	case []byte:
		return RowString(string(x)), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return RowInt(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > math.MaxInt64 {
			return RowKey{}, fmt.Errorf("field: row key %d does not fit in an int64", rv.Uint())
		}
		return RowInt(int64(rv.Uint())), nil
	case reflect.String:
		return RowString(rv.String()), nil
	case reflect.Array:
		if rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
			var u [16]byte
			reflect.Copy(reflect.ValueOf(u[:]), rv)
			return RowString(uuidText(u)), nil
		}
	}
	return RowKey{}, fmt.Errorf("field: unsupported row key type %T (an integer, a string or a UUID)", v)
}

// Err returns the [ErrBinding] a bound value given to With recorded, or
// nil.
func (r RowKey) Err() error {
	if r.with == nil {
		return nil
	}
	return r.with.err
}

func (r RowKey) appendTo(b []byte) []byte {
	if r.isInt {
		return strconv.AppendInt(b, r.n, 10)
	}
	return append(b, r.s...)
}

// String returns the row key's text (without bound values).
func (r RowKey) String() string { return string(r.appendTo(nil)) }

// ErrBinding means the bound values given do not fit the column: a column
// declared with Bind got another number of values, or one that cannot be
// converted; or a column without Bind got bound values.
var ErrBinding = errors.New("field: bound values do not match the column's binding")
