package field

import (
	"errors"
	"slices"
	"testing"

	"github.com/wardlab/ward/forms"
)

// TestMixedModeWaitsForTheFleet: a column in mixed mode with a gate writes
// plaintext — stored as it is, read back by a column that has never heard
// of ciphertexts and by itself — until the fleet opens the sealed form;
// then it seals. A plaintext that would read as a ciphertext is refused
// rather than stored.
func TestMixedModeWaitsForTheFleet(t *testing.T) {
	kr := newKR(t)
	g := forms.New()
	col := mustColumn(t, kr, "users", "email", WithEncoding(Text), AcceptPlaintext(), WithForms(g))
	if !slices.Contains(g.Declared(), forms.Sealed("users", "email")) || !slices.Contains(g.Wanted(), forms.Sealed("users", "email")) {
		t.Fatalf("the column declares %v and wants %v", g.Declared(), g.Wanted())
	}
	ct, err := col.SealString(RowInt(1), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ct.AsText().Value()
	if err != nil || v != "alice@example.com" || !ct.IsPlaintext() {
		t.Fatalf("before the form opens the column wrote %q (%v)", v, err)
	}
	var back Ciphertext
	back.Scan(v)
	if got, err := col.OpenString(RowInt(1), back); err != nil || got != "alice@example.com" {
		t.Fatalf("read back: %q %v", got, err)
	}
	real, _ := mustColumn(t, kr, "users", "email", WithEncoding(Text)).SealString(RowInt(2), "x")
	realText, _ := real.Value()
	for _, looks := range []string{realText.(string), "w7:AAAA"} {
		if _, err := col.SealString(RowInt(1), looks); !errors.Is(err, forms.ErrNotOpen) {
			t.Fatalf("a plaintext that reads as a ciphertext (%.10s…) was stored as plaintext: %v", looks, err)
		}
	}
	g.SetOpen([]forms.Form{forms.Sealed("users", "email")})
	ct, err = col.SealString(RowInt(1), "alice@example.com")
	if v, _ := ct.AsText().Value(); err != nil || ct.IsPlaintext() || v == "alice@example.com" {
		t.Fatalf("after the form opened the column wrote %q (%v)", v, err)
	}
	// A column without mixed mode seals whatever the gate says, and records
	// that the database depends on ciphertexts.
	g2 := forms.New()
	strict := mustColumn(t, kr, "users", "email", WithEncoding(Text), WithForms(g2))
	if ct, err := strict.SealString(RowInt(1), "bob@example.com"); err != nil || ct.IsPlaintext() {
		t.Fatalf("a strict column wrote plaintext: %v", err)
	}
	if !slices.Contains(g2.Wanted(), forms.Sealed("users", "email")) {
		t.Fatal("a strict column does not ask for the sealed form")
	}
}
