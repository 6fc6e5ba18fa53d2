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
