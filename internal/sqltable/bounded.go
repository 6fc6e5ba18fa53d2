package sqltable

import (
	"fmt"
	"strings"
)

// Bound limits the bytes a read takes from one column (TEXT, BLOB or
// BYTEA): Col is the quoted column name, Max its bound in bytes.
type Bound struct {
	Col string
	Max int
}

// Value returns a select expression that yields the column's value when
// it is at most b.Max bytes long and an empty one otherwise. It tests the
// length with octet_length, which SQLite answers from the record header
// and PostgreSQL from the value's header, so that a database writer's
// huge value is loaded neither into the database's memory nor into the
// process's. (substr would still load the whole value in SQLite.)
func (b Bound) Value() string {
	return fmt.Sprintf("CASE WHEN octet_length(%[1]s) > %[2]d THEN '' ELSE %[1]s END", b.Col, b.Max)
}

// TooLong returns a select expression, to scan into a bool, that is true
// when any of the bounds' columns is longer than its bound.
func TooLong(bounds ...Bound) string {
	parts := make([]string, len(bounds))
	for i, b := range bounds {
		parts[i] = fmt.Sprintf("octet_length(%s) > %d", b.Col, b.Max)
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}
