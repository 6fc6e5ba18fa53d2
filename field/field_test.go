package field

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wardlab/ward/keyring"
)

func newKR(t testing.TB) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func mustColumn(t testing.TB, kr *keyring.Keyring, table, col string, opts ...ColumnOption) *Column {
	t.Helper()
	c, err := NewColumn(kr, table, col, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestContextBinding(t *testing.T) {
	kr := newKR(t)
	body := mustColumn(t, kr, "messages", "body")
	ct, err := body.SealString(RowInt(1), "hello")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := body.OpenString(RowString("1"), ct); err != nil || s != "hello" {
		t.Fatalf("RowString(\"1\") should equal RowInt(1): %q %v", s, err)
	}
	for _, tc := range []struct {
		name string
		col  *Column
		row  RowKey
	}{
		{"other row", body, RowInt(2)},
		{"other column", mustColumn(t, kr, "messages", "title"), RowInt(1)},
		{"other table", mustColumn(t, kr, "notes", "body"), RowInt(1)},
		// Length prefixes keep ("ab","c") and ("a","bc") apart.
		{"shifted names", mustColumn(t, kr, "messagesb", "ody"), RowInt(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.col.Open(tc.row, ct)
			if !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("err = %v", err)
			}
			var oe *OpenError
			if !errors.As(err, &oe) || oe.Table != tc.col.Table() {
				t.Fatalf("want OpenError, got %v", err)
			}
			if strings.Contains(err.Error(), "hello") {
				t.Fatal("plaintext in error")
			}
		})
	}
}

func TestNullAndEmpty(t *testing.T) {
	kr := newKR(t)
	c := mustColumn(t, kr, "t", "c")
	null, _ := c.SealNullString(RowInt(1), sql.NullString{})
	empty, _ := c.SealNullString(RowInt(1), sql.NullString{Valid: true})
	if v, _ := null.Value(); v != nil {
		t.Fatalf("NULL became %v", v)
	}
	if v, _ := empty.Value(); v == nil {
		t.Fatal("empty string became NULL")
	}
	if ns, err := c.OpenNullString(RowInt(1), null); err != nil || ns.Valid {
		t.Fatal(ns, err)
	}
	if ns, err := c.OpenNullString(RowInt(1), empty); err != nil || !ns.Valid || ns.String != "" {
		t.Fatal(ns, err)
	}
	if _, err := c.Open(RowInt(1), null); !errors.Is(err, ErrNull) {
		t.Fatal(err)
	}
}

func TestCiphertextScan(t *testing.T) {
	kr := newKR(t)
	bin := mustColumn(t, kr, "t", "c")
	txt := mustColumn(t, kr, "t", "c", WithEncoding(Text))
	ct, _ := txt.SealString(RowInt(7), "v")
	v, _ := ct.Value()
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "w4:") {
		t.Fatalf("text value %T %v", v, v)
	}
	// Both encodings are accepted by Scan, as string or []byte.
	for _, src := range []any{s, []byte(s), ct.Bytes()} {
		var back Ciphertext
		if err := back.Scan(src); err != nil {
			t.Fatal(err)
		}
		if got, err := bin.OpenString(RowInt(7), back); err != nil || got != "v" {
			t.Fatalf("%T: %q %v", src, got, err)
		}
	}
	var c Ciphertext
	if err := c.Scan(42); err == nil {
		t.Fatal("int scanned")
	}
	// A value that does not parse is held, and refused by Open.
	if err := c.Scan("w1:***"); err != nil {
		t.Fatal(err)
	}
	if _, err := bin.Open(RowInt(7), c); !errors.Is(err, ErrPlaintext) || !errors.Is(err, keyring.ErrMalformed) {
		t.Fatal(err)
	}
	// Scan copies: the driver may reuse its buffer.
	raw := bytes.Clone(ct.Bytes())
	var held Ciphertext
	held.Scan(raw)
	clear(raw)
	if _, err := bin.Open(RowInt(7), held); err != nil {
		t.Fatal("Scan did not copy its input")
	}
	if _, err := ParseCiphertext([]byte{1, 2}); !errors.Is(err, keyring.ErrTruncated) {
		t.Fatal(err)
	}
}

func TestScannerDestinations(t *testing.T) {
	kr := newKR(t)
	c := mustColumn(t, kr, "t", "c")
	ct, _ := c.SealString(RowInt(1), "x")
	v, _ := ct.Value()
	var s string
	var b []byte
	var ns sql.NullString
	for _, d := range []any{&s, &b, &ns} {
		if err := c.Scanner(RowInt(1), d).Scan(v); err != nil {
			t.Fatal(err)
		}
	}
	if s != "x" || string(b) != "x" || ns.String != "x" || !ns.Valid {
		t.Fatal(s, b, ns)
	}
	if err := c.Scanner(RowInt(1), &s).Scan(nil); !errors.Is(err, ErrNull) {
		t.Fatal(err)
	}
	var i int
	if err := c.Scanner(RowInt(1), &i).Scan(v); err == nil {
		t.Fatal("*int accepted")
	}
	if err := c.Scanner(RowInt(2), &s).Scan(v); !errors.Is(err, keyring.ErrWrongContext) {
		t.Fatal(err)
	}
}

func TestBlindIndex(t *testing.T) {
	kr := newKR(t)
	idx, err := NewBlindIndex(kr, "users", "email", WithNormalizer(NormalizeFold))
	if err != nil {
		t.Fatal(err)
	}
	a := idx.Compute("  Alice@Example.COM ")
	if !bytes.Equal(a, idx.Compute("alice@example.com")) {
		t.Fatal("normalisation not applied")
	}
	if bytes.Equal(a, idx.Compute("bob@example.com")) || len(a) != DefaultIndexSize {
		t.Fatal("distinct values collide or wrong size")
	}
	nfc, _ := NewBlindIndex(kr, "users", "name")
	if !bytes.Equal(nfc.Compute("caf\u00e9"), nfc.Compute("cafe\u0301")) {
		t.Fatal("NFC equivalents differ")
	}
	if bytes.Equal(nfc.Compute("Café"), nfc.Compute("café")) {
		t.Fatal("default normaliser folded case")
	}
	other, _ := NewBlindIndex(kr, "users", "email2", WithNormalizer(NormalizeFold))
	if bytes.Equal(a, other.Compute("alice@example.com")) {
		t.Fatal("columns share an index key")
	}
	if _, err := keyring.NewManager(kr).AddPrimary(context.Background(), keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	again, _ := NewBlindIndex(kr, "users", "email", WithNormalizer(NormalizeFold))
	if !bytes.Equal(a, again.Compute("alice@example.com")) {
		t.Fatal("index changed with data key rotation")
	}
	short, _ := NewBlindIndex(kr, "users", "email", WithIndexSize(4), WithNormalizer(NormalizeFold))
	if got := short.Compute("alice@example.com"); !bytes.Equal(got, a[:4]) {
		t.Fatal("truncation is not a prefix")
	}
	for _, n := range []int{0, 3, 33} {
		if _, err := NewBlindIndex(kr, "t", "c", WithIndexSize(n)); err == nil {
			t.Fatalf("size %d accepted", n)
		}
	}
	bad := string([]byte{0xff, 0xfe})
	if utf8.ValidString(bad) || len(nfc.Compute(bad)) != DefaultIndexSize {
		t.Fatal("invalid UTF-8")
	}
}

func TestNewColumnErrors(t *testing.T) {
	if _, err := NewColumn(nil, "t", "c"); err == nil {
		t.Fatal("nil keyring")
	}
	if _, err := NewColumn(newKR(t), "", "c"); err == nil {
		t.Fatal("empty table")
	}
	if _, err := NewColumn(newKR(t), "t", "c", WithEncoding(9)); err == nil {
		t.Fatal("bad encoding")
	}
	if _, err := QuoteIdent(`x"; DROP TABLE y; --`); err == nil {
		t.Fatal("injection accepted")
	}
	if q, err := QuoteIdent("public.messages"); err != nil || q != `"public"."messages"` {
		t.Fatal(q, err)
	}
}

func FuzzCiphertextScan(f *testing.F) {
	kr, _ := keyring.New(keyring.AES256GCM)
	c, _ := NewColumn(kr, "t", "c")
	ct, _ := c.SealString(RowInt(1), "seed")
	f.Add(ct.Bytes(), "")
	f.Add([]byte(nil), keyring.EncodeText(ct.Bytes()))
	f.Fuzz(func(t *testing.T, b []byte, s string) {
		for _, src := range []any{b, s} {
			var x Ciphertext
			if err := x.Scan(src); err != nil {
				continue
			}
			pt, err := c.Open(RowInt(1), x)
			if err == nil && string(pt) != "seed" {
				t.Fatalf("forged value opened: %q", pt)
			}
		}
	})
}
