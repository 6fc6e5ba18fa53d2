// Package printable makes strings a database writer controls safe to print
// on a terminal: names of tables, columns, namespaces, processes and hosts
// that ward reads from the database and writes in its output.
package printable

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// String returns s, or s quoted with Go's escapes (strconv.Quote) if it
// holds anything but printable characters (or is not UTF-8): no escape sequence, control
// character or line break of s reaches the terminal, and a strange name
// stands out.
func String(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
