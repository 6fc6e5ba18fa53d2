package field

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

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

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

// keyring, or is older than a generation seen is refused.

func TestLedger(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		dir := t.TempDir()
		mk := local.Generate()
		kr, err := keyring.Create(ctx, filepath.Join(dir, "kr.json"), mk, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Check(ctx, kr); err != nil {
			t.Fatalf("empty ledger: %v", err)
		}
		if ids, err := l.Keyrings(ctx); err != nil || len(ids) != 0 {
			t.Fatalf("empty ledger lists %v %v", ids, err)
		}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if ids, err := l.Keyrings(ctx); err != nil || len(ids) != 1 || ids[0] != kr.ID() {
			t.Fatalf("ledger lists %v %v, want [%s]", ids, err, kr.ID())
		}
		if es, err := l.Entries(ctx); err != nil || len(es) != 1 || es[0].Keyring != kr.ID() || es[0].Key != kr.Primary().ID || es[0].Generation != kr.Generation() {
			t.Fatalf("ledger entries %+v %v", es, err)
		}
		stale, _ := os.ReadFile(kr.Path())
		id, _ := kr.Add(ctx, keyring.AES256GCM)
		if err := l.Record(ctx, kr, id); err != nil {
			t.Fatal(err)
		}
		kr.Promote(ctx, id)
		l.Record(ctx, kr)
		if err := l.Check(ctx, kr); err != nil {
			t.Fatal(err)
		}
		// An older copy of the file: missing the new key and older.
		os.WriteFile(filepath.Join(dir, "old.json"), stale, 0o600)
		old, _ := keyring.Load(ctx, filepath.Join(dir, "old.json"), mk)
		if err := l.Check(ctx, old); !errors.Is(err, keyring.ErrRollback) {
			t.Fatalf("rolled-back keyring: %v", err)
		}
		// A brand-new keyring (the path had a typo): another keyring.
		other, _ := keyring.Create(ctx, filepath.Join(dir, "new.json"), mk, keyring.AES256GCM)
		if err := l.Check(ctx, other); !errors.Is(err, keyring.ErrWrongKeyring) {
			t.Fatalf("another keyring: %v", err)
		}
		// The same keyring at the same generation, but with a key lost
		// (written by a tool that dropped it): missing keys are named.
		l2 := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger2")}
		l2.Record(ctx, kr, kr.Primary().ID, 0x12345678)
		var me *MissingKeysError
		if err := l2.Check(ctx, kr); !errors.As(err, &me) || len(me.IDs) != 1 || me.IDs[0] != 0x12345678 || !errors.Is(err, keyring.ErrUnknownKey) {
			t.Fatalf("missing key: %v", err)
		}
	})
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
