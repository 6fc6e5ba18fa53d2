package field

import (
	"encoding/binary"
	"fmt"
)

// Context domains. A column without bound columns binds a value to table,
// column and row key (v1, the layout since the first release). A column
// declared with [Bind] binds it also to the names and values of its bound
// columns (v2). FORMAT.md gives both byte by byte.
const (
	contextDomainV1 = "ward/field/v1"
	contextDomainV2 = "ward/field/v2"
)

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

// appendContextPrefixV2 encodes the fixed part of a v2 context:
//
//	"ward/field/v2" 0x00 uvarint(len(table)) table uvarint(len(column)) column
//	uvarint(count) { uvarint(len(name)) name }*count
//
// followed, per value, by uvarint(len(row key)) row key and, for each bound
// column, uvarint(0) for NULL or uvarint(len(value)+1) value.
func appendContextPrefixV2(b []byte, table, column string, bind []string) []byte {
	b = append(b, contextDomainV2...)
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

// appendRowV2 appends the per-value part of a v2 context.
func appendRowV2(b []byte, row RowKey) []byte {
	var key [24]byte
	k := row.appendTo(key[:0])
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	for _, v := range row.bound {
		if v.null {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(v.text))+1)
		b = append(b, v.text...)
	}
	return b
}

// context appends the context a value in row is bound to, under the
// column's current binding.
func (c *Column) context(buf []byte, row RowKey) ([]byte, error) {
	if row.err != nil {
		return nil, row.err
	}
	if len(row.bound) != len(c.bind) {
		return nil, fmt.Errorf("%w: %s.%s binds %d columns %v, got %d values", ErrBinding, c.table, c.name, len(c.bind), c.bind, len(row.bound))
	}
	if c.bind == nil {
		return row.appendTo(append(buf[:0], c.prefix...)), nil
	}
	return appendRowV2(append(buf[:0], c.prefix...), row), nil
}

// legacyContext is the v1 context of row, which bound columns replace.
func (c *Column) legacyContext(buf []byte, row RowKey) []byte {
	return row.appendTo(append(buf[:0], c.legacyPrefix...))
}
