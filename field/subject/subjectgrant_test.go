package subject

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// TestSubjectGrant: a grant of one user's message bodies holds each asked
// version's K_scope once, prints no key, refuses a column without subject
// keys, a v3 value and a forgotten user, and its keys are zeroed by
// Destroy.
func TestSubjectGrant(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		s := e.store(t, 0)
		col := e.column(t, s)
		ct, err := col.SealString(field.RowInt(1).With("alice"), "hello")
		if err != nil {
			t.Fatal(err)
		}
		v, ok := ct.SubjectKeyVersion()
		if !ok || ct.Version() != 4 {
			t.Fatalf("a v4 value under alice's key: version %d, v%d", v, ct.Version())
		}
		g, err := col.SubjectGrant("alice", v, v)
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := s.OpeningKey("alice", v)
		want, _ := sk.DeriveScope(keyring.FieldScope("messages", "body"))
		if len(g.Keys) != 1 || g.Keys[0].Version != v || string(g.Keys[0].Material) != string(want) || g.Subject != "alice" {
			t.Fatalf("grant %v: %+v", g, g.Keys)
		}
		if str := g.String(); !strings.Contains(str, "messages.body") || strings.Contains(str, string(want)) {
			t.Errorf("String: %q", str)
		}
		g.Destroy()
		if string(g.Keys[0].Material) == string(want) {
			t.Error("Destroy left the key")
		}
		plain, _ := field.NewColumn(e.kr, "notes", "title")
		if _, err := plain.SubjectGrant("alice", v); err == nil {
			t.Error("a grant of a column without subject keys")
		}
		v3, _ := field.ParseCiphertext(mustSealV3(t, e.kr))
		if v, ok := v3.SubjectKeyVersion(); ok {
			t.Errorf("a v3 value under a keyring key names subject key version %d", v)
		}
		if err := s.Forget(context.Background(), "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := col.SubjectGrant("alice", v); !errors.Is(err, field.ErrSubjectErased) {
			t.Errorf("a forgotten user's grant: %v", err)
		}
	})
}

func mustSealV3(t *testing.T, kr *keyring.Keyring) []byte {
	t.Helper()
	ct, err := kr.Seal([]byte("v3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}
