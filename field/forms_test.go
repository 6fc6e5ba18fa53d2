package field

import (
	"crypto/fips140"
	"errors"
	"slices"
	"testing"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
)

// TestMixedModeWaitsForTheFleet: a column in mixed mode with a gate writes
// plaintext — stored as it is, read back by a column that has never heard
// of ciphertexts and by itself — until the fleet opens the sealed form;
// then it seals. A plaintext that would read as a ciphertext is refused
// rather than stored.
func TestMixedModeWaitsForTheFleet(t *testing.T) {
	kr := newKR(t)
	g := fleetgate.New()
	col := mustColumn(t, kr, "users", "email", WithEncoding(Text), AcceptPlaintext(), WithForms(g))
	if !slices.Contains(g.Declared(), fleetgate.Sealed("users", "email")) || !slices.Contains(g.Wanted(), fleetgate.Sealed("users", "email")) {
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
		if _, err := col.SealString(RowInt(1), looks); !errors.Is(err, fleetgate.ErrNotOpen) {
			t.Fatalf("a plaintext that reads as a ciphertext (%.10s…) was stored as plaintext: %v", looks, err)
		}
	}
	g.SetOpen([]fleetgate.Form{fleetgate.Sealed("users", "email")})
	ct, err = col.SealString(RowInt(1), "alice@example.com")
	if v, _ := ct.AsText().Value(); err != nil || ct.IsPlaintext() || v == "alice@example.com" {
		t.Fatalf("after the form opened the column wrote %q (%v)", v, err)
	}
	// A column without mixed mode seals whatever the gate says, and records
	// that the database depends on ciphertexts.
	g2 := fleetgate.New()
	strict := mustColumn(t, kr, "users", "email", WithEncoding(Text), WithForms(g2))
	if ct, err := strict.SealString(RowInt(1), "bob@example.com"); err != nil || ct.IsPlaintext() {
		t.Fatalf("a strict column wrote plaintext: %v", err)
	}
	if !slices.Contains(g2.Wanted(), fleetgate.Sealed("users", "email")) {
		t.Fatal("a strict column does not ask for the sealed form")
	}
}

// TestVersion4WaitsForTheFleet: a column with a gate declares that it
// reads ciphertexts v3 and v4, asks for v4, and writes v3 until the fleet
// opens v4 — values a process of an earlier release opens — then v4; it
// opens both all along, bound and unbound (AcceptLegacyBinding).
func TestVersion4WaitsForTheFleet(t *testing.T) {
	kr := newKR(t)
	g := fleetgate.New()
	col := mustColumn(t, kr, "msgs", "body", Bind("owner"), AcceptLegacyBinding(), WithForms(g))
	v3, v4 := fleetgate.Ciphertext(3), fleetgate.Ciphertext(4)
	if d := g.Declared(); !slices.Contains(d, v3) || !slices.Contains(d, v4) || !slices.Contains(g.Wanted(), v4) {
		t.Fatalf("the column declares %v and wants %v", d, g.Wanted())
	}
	row := RowInt(1).With("alice")
	old, err := col.SealString(row, "before")
	before := byte(3)
	if fips140.Enabled() {
		before = 4 // v3 is never sealed in the FIPS 140-3 mode
	}
	if err != nil || old.Version() != before || col.WriteVersion() != before {
		t.Fatalf("before v4 opens: version %d %v", old.Version(), err)
	}
	g.SetOpen([]fleetgate.Form{v4})
	fresh, err := col.SealString(row, "after")
	if err != nil || fresh.Version() != 4 || col.WriteVersion() != 4 {
		t.Fatalf("after v4 opens: version %d %v", fresh.Version(), err)
	}
	for want, ct := range map[string]Ciphertext{"before": old, "after": fresh} {
		if got, err := col.OpenString(row, ct); err != nil || got != want {
			t.Fatalf("%s: %q %v", want, got, err)
		}
		if _, err := col.OpenString(RowInt(1).With("bob"), ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("%s, moved to another owner: %v", want, err)
		}
		if bound, unbound := col.Matches(row, ct); !bound || unbound {
			t.Fatalf("%s: Matches %v %v", want, bound, unbound)
		}
	}
	// A v4 value sealed before the column bound its owner opens through
	// the legacy path, counted, and through OpenRebinding.
	unbound := mustColumn(t, kr, "msgs", "body")
	pre, _ := unbound.SealString(RowInt(2), "unbound")
	if got, err := col.OpenString(RowInt(2).With("carol"), pre); err != nil || got != "unbound" || col.LegacyOpens() != 1 {
		t.Fatalf("legacy v4: %q %v (%d)", got, err, col.LegacyOpens())
	}
	strict := mustColumn(t, kr, "msgs", "body", Bind("owner"))
	if got, err := strict.OpenRebinding(RowInt(2).With("carol"), pre); err != nil || string(got) != "unbound" {
		t.Fatalf("rebinding v4: %q %v", got, err)
	}
	if _, err := strict.OpenString(RowInt(2).With("carol"), pre); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("a strict column opened an unbound v4 value: %v", err)
	}
	// Another column of the same keyring cannot open it: its key differs.
	other := mustColumn(t, kr, "msgs", "title", Bind("owner"))
	if _, err := other.OpenString(row, fresh); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatalf("another column: %v", err)
	}
}
