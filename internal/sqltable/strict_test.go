package sqltable

import (
	"errors"
	"strings"
	"testing"
)

// TestStrictMode: a mode is strict when one of its comma-separated names
// is STRICT_TRANS_TABLES or STRICT_ALL_TABLES, not when a name merely
// contains one; the error names the setting, quoted, whatever it holds.
func TestStrictMode(t *testing.T) {
	for mode, want := range map[string]bool{
		"":                       false,
		"NO_ENGINE_SUBSTITUTION": false,
		"STRICT_TRANS_TABLES":    true,
		"ANSI_QUOTES,STRICT_ALL_TABLES,NO_ZERO_DATE": true,
		"X_STRICT_TRANS_TABLES":                      false,
		"STRICT_TRANS_TABLES ":                       false,
	} {
		if strictMode(mode) != want {
			t.Errorf("%q: strict %v", mode, !want)
		}
	}
	err := error(&NotStrictError{Scope: "GLOBAL", Mode: "ANSI\x1b[2J"})
	if !errors.Is(err, ErrNotStrict) || !strings.Contains(err.Error(), `@@GLOBAL.sql_mode is "ANSI\x1b[2J"`) {
		t.Fatal(err)
	}
}
