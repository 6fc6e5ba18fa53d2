package field

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardlab/ward/keyring"
)

func TestBind(t *testing.T) {
	kr := newKR(t)
	body := mustColumn(t, kr, "messages", "body", Bind("conversation_id", "role"))
	ct, err := body.SealString(RowInt(7).With(int64(100), "user"), "hello")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := body.OpenString(RowString("7").With("100", []byte("user")), ct); err != nil || s != "hello" {
		t.Fatalf("same values in other types: %q %v", s, err)
	}
	for name, row := range map[string]RowKey{
		"moved to another conversation": RowInt(7).With(int64(101), "user"),
		"role flipped":                  RowInt(7).With(int64(100), "assistant"),
		"bound value NULL":              RowInt(7).With(nil, "user"),
		"another row":                   RowInt(8).With(int64(100), "user"),
	} {
		if _, err := body.Open(row, ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, row := range map[string]RowKey{
		"no bound values":   RowInt(7),
		"too few":           RowInt(7).With(int64(100)),
		"unsupported type":  RowInt(7).With(int64(100), 1.5),
		"bound on unbound?": RowInt(7).With(1, 2, 3),
	} {
		if _, err := body.Open(row, ct); !errors.Is(err, ErrBinding) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := body.SealString(row, "x"); !errors.Is(err, ErrBinding) {
			t.Errorf("seal %s: %v", name, err)
		}
	}
	plain := mustColumn(t, kr, "messages", "body")
	if _, err := plain.SealString(RowInt(1).With("x"), "x"); !errors.Is(err, ErrBinding) {
		t.Fatalf("bound values on a column without Bind: %v", err)
	}
	// Length prefixes keep ("ab","c") and ("a","bc") apart, NULL apart from "".
	a, _ := body.Context(RowInt(1).With("ab", "c"))
	b, _ := body.Context(RowInt(1).With("a", "bc"))
	c, _ := body.Context(RowInt(1).With(nil, "c"))
	d, _ := body.Context(RowInt(1).With("", "c"))
	if string(a) == string(b) || string(c) == string(d) {
		t.Fatal("contexts collide")
	}
	if _, err := NewColumn(kr, "t", "c", AcceptLegacyBinding()); err == nil {
		t.Fatal("AcceptLegacyBinding without Bind accepted")
	}
}

func TestRowMAC(t *testing.T) {
	kr := newKR(t)
	m, err := NewRowMAC(kr, "sessions", "token_hash", "user_id", "expires")
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := m.Sum([]byte("tok"), int64(42), int64(1700000000))
	if err := m.Verify(tag, []byte("tok"), "42", int64(1700000000)); err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(tag, []byte("tok"), int64(43), int64(1700000000)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("re-pointed user: %v", err)
	}
	other, _ := NewRowMAC(kr, "sessions", "token_hash", "user_id")
	if err := other.Verify(tag, []byte("tok"), int64(42), int64(1700000000)); !errors.Is(err, ErrRowMAC) {
		t.Fatalf("another column list: %v", err)
	}
	if _, err := m.Sum(1.5); !errors.Is(err, ErrBinding) {
		t.Fatal(err)
	}
}

// TestPooledContexts interleaves, on one column, what reuses its pooled
// associated-data buffers differently: current values, a value bound
// before the column declared its bound columns (the legacy retry, which
// writes another prefix into the buffer), a failed binding, a long bound
// value that grows the buffer, and v2 values from the golden file's era.
// Every value must still open and every new one seal as if each call had
// its own buffer.
func TestPooledContexts(t *testing.T) {
	kr := newKR(t)
	unbound := mustColumn(t, kr, "messages", "body")
	body := mustColumn(t, kr, "messages", "body", Bind("conversation_id"), AcceptLegacyBinding())
	old, err := unbound.SealString(RowInt(5), "before Bind")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000)
	for i := range 50 {
		row := RowInt(int64(i)).With(int64(100 + i))
		ct, err := body.SealString(row, "current")
		if err != nil {
			t.Fatal(err)
		}
		if s, err := body.OpenString(RowInt(5).With(int64(1)), old); err != nil || s != "before Bind" {
			t.Fatalf("round %d: legacy binding: %q %v", i, s, err)
		}
		if s, err := body.OpenString(row, ct); err != nil || s != "current" {
			t.Fatalf("round %d: after the legacy retry: %q %v", i, s, err)
		}
		if _, err := body.SealString(RowInt(1), "x"); !errors.Is(err, ErrBinding) {
			t.Fatalf("round %d: %v", i, err)
		}
		big, err := body.SealString(RowInt(1).With(long), "long")
		if err != nil {
			t.Fatal(err)
		}
		if s, err := body.OpenString(RowInt(1).With(long), big); err != nil || s != "long" {
			t.Fatalf("round %d: long bound value: %q %v", i, s, err)
		}
		if s, err := body.OpenString(row, ct); err != nil || s != "current" {
			t.Fatalf("round %d: after a failed binding and a long value: %q %v", i, s, err)
		}
		if _, err := body.Open(RowInt(int64(i)).With(int64(99)), ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("round %d: moved value: %v", i, err)
		}
	}
}

// TestSealAllocations checks that sealing and opening allocate nothing but
// their output when buffers are reused, whatever length of bound values
// leaves the pooled buffer full to the byte: the context check's work area
// must not be allocated per value.
func TestSealAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	kr := newKR(t)
	col := mustColumn(t, kr, "messages", "body", Bind("owner"))
	pt := []byte("hello")
	for n := range 200 {
		row := RowInt(7).With(strings.Repeat("o", n))
		ct, err := col.AppendSeal(nil, row, pt)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 0, len(pt))
		allocs := testing.AllocsPerRun(20, func() {
			if ct, err = col.AppendSeal(ct[:0], row, pt); err != nil {
				t.Fatal(err)
			}
			if out, err = col.AppendOpen(out[:0], row, ct); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("bound value of %d bytes: %v allocations per seal and open", n, allocs)
		}
	}
}
