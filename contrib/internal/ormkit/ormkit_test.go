package ormkit

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/wardlab/ward/keyring"
)

// TestParseTag: every adapter reads the same tag the same way, flags
// included (the copies this replaced disagreed on flags).
func TestParseTag(t *testing.T) {
	got := ParseTag(" key:ID; Bind: UserID, Role ;index:Email;binary;;")
	want := map[string]string{"key": "ID", "bind": "UserID, Role", "index": "Email", "binary": "true"}
	if !maps.Equal(got, want) {
		t.Fatalf("%v", got)
	}
	if got := ParseTag("key:-"); got["key"] != "-" {
		t.Fatalf("key:- → %v", got)
	}
	if l := List(" UserID, ,Role,"); !slices.Equal(l, []string{"UserID", "Role"}) {
		t.Fatalf("%v", l)
	}
}

// TestIndexes: one index per column, equal to itself across calls and
// case-folded; different columns differ.
func TestIndexes(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	x := NewIndexes(kr)
	a, _ := x.Compute("users", "email", "Alice@Example.com")
	b, _ := x.Compute("users", "email", "alice@example.com")
	c, _ := x.Compute("users", "backup_email", "alice@example.com")
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("index not stable, not folded, or shared across columns")
	}
	i1, _ := x.Get("users", "email")
	i2, _ := x.Get("users", "email")
	if i1 != i2 {
		t.Fatal("index built twice")
	}
}
