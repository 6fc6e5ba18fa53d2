package printable

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestString: printable names are left as they are; anything else is
// quoted, and no control character survives.
func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"users":                  "users",
		"notes.body":             "notes.body",
		"café":                   "café",
		"\x1b[2J\x1b[Hall clear": `"\x1b[2J\x1b[Hall clear"`,
		"line\nbreak":            `"line\nbreak"`,
		"tab\there":              `"tab\there"`,
		"bad utf-8 \xff":         `"bad utf-8 \xff"`,
		"right-to-left \u202e x": `"right-to-left \u202e x"`,
	} {
		got := String(in)
		if got != want || strings.ContainsAny(got, "\x1b\n\t\u202e") {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzString: the result never holds a character that is not printable.
func FuzzString(f *testing.F) {
	f.Add("\x1b]0;title\x07")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(String(s)) {
			t.Fatalf("String(%q) is not UTF-8", s)
		}
		for _, r := range String(s) {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("String(%q) holds %q", s, r)
			}
		}
	})
}
