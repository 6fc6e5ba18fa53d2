package subject

import (
	"context"
	"crypto/fips140"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/password"
)

func newHasher(t *testing.T) *password.Hasher {
	t.Helper()
	p := password.Params{Scheme: password.Argon2id, Memory: 64, Time: 1, Parallelism: 1}
	if fips140.Enabled() {
		// The FIPS 140-3 mode's key-bearing hashes: PBKDF2, then HKDF.
		p = password.Params{Scheme: password.PBKDF2SHA256, Iterations: 1000, SaltLen: 16, KeyLen: 32}
	}
	h, err := password.NewHasher(password.Policy{Preferred: p, AllowWeak: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func token(t *testing.T) []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// TestUserHeld: a private subject's values open only through a live
// session of its user — in any process — and never from the database,
// keyring file and master key alone; password change, reset with and
// without a recovery code, and forget behave as documented.
func TestUserHeld(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := newHasher(t)
		a, b := e.store(t, time.Minute), e.store(t, time.Minute) // two processes
		ca, cb := e.column(t, a), e.column(t, b)
		e.insert(t, ca, 1, "alice", "before private")
		e.insert(t, ca, 2, "bob", "bob's")

		hash, secret, err := h.HashWithKey(ctx, []byte("alice pw"))
		if err != nil {
			t.Fatal(err)
		}
		u, code, err := a.MakePrivate(ctx, "alice", secret, PrivateOptions{Recovery: true})
		if err != nil || code == "" {
			t.Fatalf("MakePrivate: %q, %v", code, err)
		}
		if private, _ := a.Private(ctx, "alice"); !private {
			t.Fatal("alice is not private")
		}
		// The store alone — the operator's view — opens nothing of alice,
		// seals nothing for her, and still serves bob.
		for _, c := range []*field.Column{ca, cb} {
			if _, err := e.read(t, c, 1); !errors.Is(err, field.ErrSubjectLocked) {
				t.Fatalf("alice's value without a session: %v", err)
			}
			if _, err := c.SealString(field.RowInt(9).With("alice"), "x"); !errors.Is(err, field.ErrSubjectLocked) {
				t.Fatalf("sealing for alice without a session: %v", err)
			}
			if got, err := e.read(t, c, 2); err != nil || got != "bob's" {
				t.Fatalf("bob: %q, %v", got, err)
			}
		}
		// A keyring file reloaded with the master key does not change that.
		kr2, err := keyring.Load(ctx, e.path, e.mk)
		if err != nil {
			t.Fatal(err)
		}
		s2, _ := Open(ctx, Config{DB: e.db, Dialect: e.d, Keyring: kr2, Ledger: e.ledger, Namespace: "users", KeysTable: e.keys, TombstonesTable: e.tombs})
		if _, err := e.read(t, e.column(t, s2), 1); !errors.Is(err, field.ErrSubjectLocked) {
			t.Fatalf("operator with keyring and master key: %v", err)
		}
		if _, err := s2.Unlock(ctx, "alice", make([]byte, 32)); !errors.Is(err, ErrWrongSecret) {
			t.Fatalf("a guessed secret: %v", err)
		}
		if st, err := s2.Reseal(ctx, ResealOptions{}); err != nil || st.UserHeld != 2 || st.Resealed != 0 { // her old version and the fresh one
			t.Fatalf("rewrap over a user-held key: %+v %v", st, err)
		}

		// A session: process A starts it, process B serves a request
		// carrying the token.
		tok := token(t)
		if err := a.StartSession(ctx, u, tok, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		u.Destroy()
		sess, err := b.Session(ctx, "alice", tok)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.read(t, cb.WithKeys(sess), 1); err != nil || got != "before private" {
			t.Fatalf("through the session: %q, %v", got, err)
		}
		e.insert(t, cb.WithKeys(sess), 3, "alice", "written while logged in")
		if got, err := e.read(t, ca.WithKeys(sess), 2); err != nil || got != "bob's" {
			t.Fatalf("bob through alice's session keys: %q, %v", got, err)
		}
		for _, bad := range [][]byte{nil, token(t)} {
			if _, err := b.Session(ctx, "alice", bad); !errors.Is(err, ErrNoSession) || !errors.Is(err, field.ErrSubjectLocked) {
				t.Fatalf("no or another token: %v", err)
			}
		}
		if _, err := b.Session(ctx, "bob", tok); err != nil {
			t.Fatalf("a subject that is not private: %v", err)
		}
		if err := a.EndSession(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Session(ctx, "alice", tok); !errors.Is(err, ErrNoSession) {
			t.Fatalf("after log-out: %v", err)
		}

		// Password change: the new secret unwraps, the old does not.
		hash2, secret2, _ := h.HashWithKey(ctx, []byte("alice pw 2"))
		tx, _ := e.db.BeginTx(ctx, nil)
		if err := a.ChangeSecret(ctx, tx, "alice", secret, secret2); err != nil {
			t.Fatal(err)
		}
		tx.Commit()
		if _, err := a.Unlock(ctx, "alice", secret); !errors.Is(err, ErrWrongSecret) {
			t.Fatalf("old secret after a change: %v", err)
		}
		got, _, err := h.VerifyWithKey(ctx, []byte("alice pw 2"), hash2)
		if err != nil {
			t.Fatal(err)
		}
		u2, err := a.Unlock(ctx, "alice", got)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := e.read(t, ca.WithKeys(u2), 3); err != nil || v != "written while logged in" {
			t.Fatalf("after the change: %q %v", v, err)
		}
		_ = hash

		// Reset with the recovery code keeps everything.
		_, secret3, _ := h.HashWithKey(ctx, []byte("alice pw 3"))
		tx, _ = e.db.BeginTx(ctx, nil)
		if _, err := a.Reset(ctx, tx, "alice", "WRONG-CODE", secret3); !errors.Is(err, ErrWrongSecret) {
			t.Fatalf("a wrong code: %v", err)
		}
		tx.Rollback()
		tx, _ = e.db.BeginTx(ctx, nil)
		if lost, err := a.Reset(ctx, tx, "alice", code, secret3); err != nil || lost != 0 {
			t.Fatalf("reset with code: %d %v", lost, err)
		}
		tx.Commit()
		u3, err := a.Unlock(ctx, "alice", secret3)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := e.read(t, ca.WithKeys(u3), 1); err != nil || v != "before private" {
			t.Fatalf("after a reset with the code: %q %v", v, err)
		}

		// Reset without a code loses what was sealed before it, and only
		// that: the user writes on under a new key.
		_, secret4, _ := h.HashWithKey(ctx, []byte("alice pw 4"))
		tx, _ = e.db.BeginTx(ctx, nil)
		lost, err := a.Reset(ctx, tx, "alice", "", secret4)
		if err != nil || lost != 2 { // her version from before private mode and the fresh one
			tx.Rollback()
			t.Fatalf("reset without code: %d %v", lost, err)
		}
		tx.Commit()
		u4, err := a.Unlock(ctx, "alice", secret4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.read(t, ca.WithKeys(u4), 1); !errors.Is(err, field.ErrSubjectKeyLost) {
			t.Fatalf("a value from before a reset without code: %v", err)
		}
		e.insert(t, ca.WithKeys(u4), 4, "alice", "after reset")
		if v, err := e.read(t, ca.WithKeys(u4), 4); err != nil || v != "after reset" {
			t.Fatalf("after reset: %q %v", v, err)
		}
		if _, err := e.read(t, ca, 4); !errors.Is(err, field.ErrSubjectLocked) {
			t.Fatalf("the new key is user-held too: %v", err)
		}

		// Forget ends everything, sessions included.
		tok2 := token(t)
		if err := a.StartSession(ctx, u4, tok2, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := a.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Session(ctx, "alice", tok2); err == nil {
			t.Fatal("a session of a forgotten subject")
		}
		if _, err := e.read(t, ca.WithKeys(u4), 4); !errors.Is(err, field.ErrSubjectErased) {
			t.Fatalf("a forgotten private subject through old keys: %v", err)
		}
	})
}

func TestRecoveryCode(t *testing.T) {
	raw := make([]byte, recoveryCodeLen)
	rand.Read(raw)
	code := formatRecoveryCode(raw)
	if len(code) != 39 {
		t.Fatalf("code %q", code)
	}
	for _, variant := range []string{code, "  " + code, lower(code), removeDashes(code)} {
		got, err := parseRecoveryCode(variant)
		if err != nil || string(got) != string(raw) {
			t.Fatalf("%q: %v", variant, err)
		}
	}
	for _, bad := range []string{"", "AAAA", code + "A", string(make([]byte, 200))} {
		if _, err := parseRecoveryCode(bad); !errors.Is(err, ErrWrongSecret) {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func removeDashes(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

// FuzzRecoveryCode: whatever a reset form sends, parseRecoveryCode never
// panics, and what it accepts is a code's 20 bytes, which format back to
// a code that parses to the same bytes.
func FuzzRecoveryCode(f *testing.F) {
	raw := make([]byte, recoveryCodeLen)
	rand.Read(raw)
	code := formatRecoveryCode(raw)
	for _, s := range []string{code, lower(code), removeDashes(code), " " + code + " ", "", "AAAA", code + "A", "0000-1111"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRecoveryCode(s)
		if err != nil {
			if !errors.Is(err, ErrWrongSecret) {
				t.Fatalf("%q: %v, not ErrWrongSecret", s, err)
			}
			return
		}
		if len(got) != recoveryCodeLen {
			t.Fatalf("%q: %d bytes", s, len(got))
		}
		again, err := parseRecoveryCode(formatRecoveryCode(got))
		if err != nil || string(again) != string(got) {
			t.Fatalf("%q: the formatted code parses to %x, %v", s, again, err)
		}
	})
}

// TestMakePrivateInCallersTx: with PrivateOptions.Tx, going private commits
// or rolls back with the caller's transaction (the one that stores the new
// password hash): rolled back, the subject is as it was.
func TestMakePrivateInCallersTx(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := newHasher(t)
		s := e.store(t, time.Nanosecond)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "a")
		_, secret, err := h.HashWithKey(ctx, []byte("alice pw"))
		if err != nil {
			t.Fatal(err)
		}
		for _, commit := range []bool{false, true} {
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.MakePrivate(ctx, "alice", secret, PrivateOptions{Tx: tx}); err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if private, err := s.Private(ctx, "alice"); err != nil || private != commit {
				t.Fatalf("after the caller's transaction (commit %v): private %v, %v", commit, private, err)
			}
		}
	})
}
