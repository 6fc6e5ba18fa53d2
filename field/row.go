package field

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// RowKey identifies a row in a ciphertext's context: the primary key, and
// for a column declared with [Bind], the values of the bound columns.
// Integer and string keys with the same decimal text are the same RowKey,
// so RowInt(42) opens what RowString("42") sealed; bound values follow the
// same rule.
type RowKey struct {
	s     string
	n     int64
	isInt bool
	bound []boundValue
	err   error // a bound value that could not be converted
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
// in the order [Bind] declared them. Values may be strings, []byte,
// integers, bools, nil (SQL NULL), or anything implementing driver.Valuer
// or fmt.Stringer (a UUID type, sql.NullInt64, …).
func (r RowKey) With(values ...any) RowKey {
	out := r
	out.bound = make([]boundValue, 0, len(values))
	for i, v := range values {
		bv, err := boundText(v)
		if err != nil && out.err == nil {
			out.err = fmt.Errorf("%w: bound value %d: %v", ErrBinding, i+1, err)
		}
		out.bound = append(out.bound, bv)
	}
	return out
}

// boundText converts a bound value to its canonical text.
func boundText(v any) (boundValue, error) {
	if vv, ok := v.(driver.Valuer); ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return boundValue{null: true}, nil
		}
		dv, err := vv.Value()
		if err != nil {
			return boundValue{}, err
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
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return boundValue{text: strconv.FormatInt(rv.Int(), 10)}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return boundValue{text: strconv.FormatUint(rv.Uint(), 10)}, nil
	}
	return boundValue{}, fmt.Errorf("unsupported type %T", v)
}

// rowFromDB converts a primary-key value scanned from the database.
func rowFromDB(v any) (RowKey, error) {
	switch x := v.(type) {
	case int64:
		return RowInt(x), nil
	case string:
		return RowString(x), nil
	case []byte:
		return RowString(string(x)), nil
	}
	return RowKey{}, fmt.Errorf("field: unsupported primary key type %T", v)
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
