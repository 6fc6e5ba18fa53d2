package field

import (
	"encoding/binary"
	"fmt"
)

// Context domains. Values sealed as ciphertext v3 are bound under the v3
// layout: table, column, the bound columns' names, the row key and the
// bound values in their canonical encodings. Older values were bound under
// v1 (table, column, row key) or, for a column declared with [Bind], v2;
// both are still read. FORMAT.md gives every layout byte by byte.
const (
	contextDomainV1 = "ward/field/v1"
	contextDomainV2 = "ward/field/v2"
	contextDomainV3 = "ward/field/v3"
	// version3 and version4 are the first bytes of ciphertexts v3 and v4.
	version3 = 3
	version4 = 4
)

// appendBoundNames encodes the fixed part of a v4 context, after the
// column's scope (keyring.FieldScope), which the value's key carries:
//
//	uvarint(count) { uvarint(len(name)) name }*count
//
// followed, per value, by the row key and the bound values as in v3.
func appendBoundNames(b []byte, bind []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(bind)))
	for _, name := range bind {
		b = appendString(b, name)
	}
	return b
}

// appendContextPrefixV1 encodes the fixed part of a v1 context:
//
//	"ward/field/v1" 0x00 uvarint(len(table)) table uvarint(len(column)) column
//
// followed, per value, by the row key's text.
func appendContextPrefixV1(b []byte, table, column string) []byte {
	b = append(b, contextDomainV1...)
	b = append(b, 0)
	b = appendString(b, table)
	return appendString(b, column)
}

// appendContextPrefix encodes the fixed part of a v2 or v3 context (domain
// says which):
//
//	domain 0x00 uvarint(len(table)) table uvarint(len(column)) column
//	uvarint(count) { uvarint(len(name)) name }*count
//
// followed, per value, by uvarint(len(row key)) row key and, for each bound
// column, uvarint(0) for NULL or uvarint(len(value)+1) value.
func appendContextPrefix(b []byte, domain, table, column string, bind []string) []byte {
	b = append(b, domain...)
	b = append(b, 0)
	b = appendString(b, table)
	b = appendString(b, column)
	b = binary.AppendUvarint(b, uint64(len(bind)))
	for _, name := range bind {
		b = appendString(b, name)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendRowKey appends uvarint(len(row key)) row key.
func appendRowKey(b []byte, row *RowKey) []byte {
	if row.isInt { // at most 20 digits: a one-byte length, written after
		b = append(b, 0)
		at := len(b)
		b = appendInt(b, row.n)
		b[at-1] = byte(len(b) - at)
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(row.s)))
	return append(b, row.s...)
}

// appendBound appends one bound value: uvarint(0) for NULL, or
// uvarint(len(value)+1) value.
func appendBound(b []byte, v boundValue) []byte {
	if v.null {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v.text))+1)
	return append(b, v.text...)
}

// checkBinding reports a row key whose bound values do not fit the column.
func (c *Column) checkBinding(row *RowKey) error {
	if row.with == nil {
		if len(c.bind) != 0 {
			return fmt.Errorf("%w: %s.%s binds %d columns %v, got none", ErrBinding, c.table, c.name, len(c.bind), c.bind)
		}
		return nil
	}
	if row.with.err != nil {
		return row.with.err
	}
	if len(row.with.values) != len(c.bind) {
		return fmt.Errorf("%w: %s.%s binds %d columns %v, got %d values", ErrBinding, c.table, c.name, len(c.bind), c.bind, len(row.with.values))
	}
	return nil
}

// context appends to buf the v3 context a value in row is bound to, under
// the column's binding: what Seal binds a new value to.
func (c *Column) context(buf []byte, row *RowKey) ([]byte, error) {
	return c.contextTail(append(buf, c.prefix...), row)
}

// contextTail appends the part of row's v3 context after the column's
// prefix: the row key and the bound values.
func (c *Column) contextTail(b []byte, row *RowKey) ([]byte, error) {
	if row.with == nil && c.bind == nil { // no bound columns: the common case
		return appendRowKey(b, row), nil
	}
	return c.contextTailBound(b, row)
}

// contextTailBound is contextTail for a column or a row with bound values.
func (c *Column) contextTailBound(b []byte, row *RowKey) ([]byte, error) {
	if err := c.checkBinding(row); err != nil {
		return nil, err
	}
	b = appendRowKey(b, row)
	for _, v := range row.bound() {
		b = appendBound(b, v)
	}
	return b, nil
}

// contextFor appends to buf the context a stored value of the given ciphertext
// version was bound to: v4 values under v4 (the part after the scope), v3
// values under v3; v1 and v2 values (the legacy
// path) under v1, or v2 for a column with bound columns, whose values are
// encoded as v2 did.
func (c *Column) contextFor(buf []byte, row *RowKey, version byte) ([]byte, error) {
	switch version {
	case version4:
		return c.contextTail(append(buf, c.prefix4...), row)
	case version3:
		return c.context(buf, row)
	}
	if c.bind == nil {
		return row.appendTo(append(buf, c.legacyPrefix...)), nil
	}
	if len(row.raw()) != len(c.bind) {
		return nil, c.checkBinding(row)
	}
	b := appendRowKey(append(buf, c.prefixV2...), row)
	for i, v := range row.raw() {
		bv, err := boundTextV2(v)
		if err != nil {
			return nil, fmt.Errorf("%w: bound value %d: %v", ErrBinding, i+1, err)
		}
		b = appendBound(b, bv)
	}
	return b, nil
}

// unboundContextFor appends to buf the context a stored value was bound to before
// the column declared its bound columns: table, column and row key only (v1
// for v1 and v2 values, v3 or v4 with no bound columns for v3 or v4 values). It is what
// [AcceptLegacyBinding] and re-binding jobs accept.
func (c *Column) unboundContextFor(buf []byte, row *RowKey, version byte) []byte {
	switch version {
	case version4:
		return appendRowKey(append(buf, 0), row) // no bound columns: uvarint(0)
	case version3:
		return appendRowKey(append(buf, c.unboundPrefix...), row)
	}
	return row.appendTo(append(buf, c.legacyPrefix...))
}
