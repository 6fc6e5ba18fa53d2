package field

import (
	"errors"
	"testing"

	"github.com/wardlab/ward/keyring"
)

// TestMixedMode: under AcceptPlaintext a value that does not parse is
// read as plaintext and counted; a value that parses must open, whatever
// the mode; without the mode plaintext is refused; a scanned plaintext is
// never written back as if it were a ciphertext.
func TestMixedMode(t *testing.T) {
	kr := newKR(t)
	strict := mustColumn(t, kr, "messages", "body", WithEncoding(Text))
	mixed := mustColumn(t, kr, "messages", "body", WithEncoding(Text), AcceptPlaintext())
	sealed, _ := strict.SealString(RowInt(1), "secret")
	stored, _ := sealed.Value()
	other, _ := strict.SealString(RowInt(2), "someone else's")
	moved, _ := other.Value()

	for _, tc := range []struct {
		name       string
		src        any
		want       string
		mixedErr   error
		strictErr  error
		plainReads uint64
	}{
		{"ciphertext", stored, "secret", nil, nil, 0},
		{"plaintext", "hello, plain world", "hello, plain world", nil, ErrPlaintext, 1},
		{"plaintext bytes", []byte("ünïcode bytes"), "ünïcode bytes", nil, ErrPlaintext, 1},
		{"looks like a prefix", "w2: not base64 at all", "w2: not base64 at all", nil, ErrPlaintext, 1},
		{"moved ciphertext", moved, "", keyring.ErrWrongContext, keyring.ErrWrongContext, 0},
		{"newer release's version", "w9:" + "AAAA", "", ErrPlaintext, ErrPlaintext, 0}, // never served as a value
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Ciphertext
			if err := c.Scan(tc.src); err != nil {
				t.Fatal(err)
			}
			before := mixed.PlaintextReads()
			got, err := mixed.OpenString(RowInt(1), c)
			if !errors.Is(err, tc.mixedErr) || (err == nil && got != tc.want) {
				t.Fatalf("mixed: %q, %v", got, err)
			}
			if n := mixed.PlaintextReads() - before; n != tc.plainReads {
				t.Fatalf("mixed: %d plaintext reads counted, want %d", n, tc.plainReads)
			}
			if _, err := strict.OpenString(RowInt(1), c); !errors.Is(err, tc.strictErr) {
				t.Fatalf("strict: %v", err)
			}
			if tc.plainReads > 0 {
				if _, err := c.Value(); !errors.Is(err, ErrPlaintext) {
					t.Fatalf("a plaintext value was written back as a ciphertext: %v", err)
				}
				if c.Bytes() != nil {
					t.Fatal("Bytes of a plaintext value")
				}
			}
		})
	}
}

// TestDamageIsNeverData: a ciphertext of this keyring cut short (a column
// too narrow, a non-strict MySQL server truncating it) or with a character
// changed in its base64 is never plaintext: one that no longer parses is
// refused with ErrDamaged by every open, mixed mode included; one that
// still parses fails its tag. The same value under another keyring's key
// is not this column's, and mixed mode still reads it as the plaintext it
// may be.
func TestDamageIsNeverData(t *testing.T) {
	kr := newKR(t)
	strict := mustColumn(t, kr, "notes", "body", WithEncoding(Text))
	mixed := mustColumn(t, kr, "notes", "body", WithEncoding(Text), AcceptPlaintext())
	sealed, _ := strict.SealString(RowInt(1), "a note of some length, long enough to be cut")
	v, _ := sealed.Value()
	text := v.(string)
	bin := sealed.Bytes()
	foreign, _ := mustColumn(t, newKR(t), "notes", "body", WithEncoding(Text)).SealString(RowInt(1), "another keyring's")
	fv, _ := foreign.Value()
	// unparsable cuts s to the longest prefix whose base64 cannot decode
	// (a length of 1 modulo 4 after the "w4:" prefix).
	unparsable := func(s string) string { return s[:3+(len(s)-4)/4*4+1] }

	for _, tc := range []struct {
		name   string
		src    any
		parses bool // then its tag fails instead
	}{
		{"text cut by one character", text[:len(text)-1], (len(text)-4)%4 != 0},
		{"text cut where base64 cannot decode", unparsable(text), false},
		{"text cut to 20 characters", text[:20], false},
		{"text cut to 15 characters", text[:15], false},
		{"text with a stray character", text[:30] + "*" + text[31:], false},
		{"binary cut after its key ID", bin[:7], false},
		{"binary cut in its nonce", bin[:15], false},
		{"binary cut in its body", bin[:len(bin)-1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Ciphertext
			if err := c.Scan(tc.src); err != nil {
				t.Fatal(err)
			}
			if (c.Err() == nil) != tc.parses {
				t.Fatalf("parses: %v, want %v", c.Err() == nil, tc.parses)
			}
			if strict.Damaged(c) == tc.parses {
				t.Fatalf("damaged: %v", strict.Damaged(c))
			}
			before := mixed.PlaintextReads()
			for _, col := range []*Column{strict, mixed} {
				got, err := col.Open(RowInt(1), c)
				want := ErrDamaged
				if tc.parses {
					want = keyring.ErrAuthentication
				}
				if !errors.Is(err, want) || errors.Is(err, ErrPlaintext) || got != nil {
					t.Fatalf("opened as %q, %v", got, err)
				}
			}
			if mixed.PlaintextReads() != before {
				t.Fatal("counted as a plaintext read")
			}
		})
	}
	// Too little left to name a key, or another keyring's key: not this
	// column's ciphertext, so the mixed mode may read it as plaintext.
	for name, src := range map[string]any{
		"text cut to 11 characters":    text[:11],
		"another keyring's, cut":       unparsable(fv.(string)),
		"binary cut inside its key ID": bin[:6],
	} {
		t.Run(name, func(t *testing.T) {
			var c Ciphertext
			if err := c.Scan(src); err != nil {
				t.Fatal(err)
			}
			if strict.Damaged(c) {
				t.Fatal("called damaged")
			}
			if _, err := mixed.Open(RowInt(1), c); err != nil {
				t.Fatalf("mixed mode: %v", err)
			}
		})
	}
}
