package subject

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestGrantPerSubject: a grant of messages.body, a column sealed under
// users' own keys, opens ordinary users' bodies — those sealed before it
// was issued (after RefreshGrants) and users who first seal after it —
// and nothing else: not a private user's, not another per-subject
// column's, not after a forget; it never seals; a revoked grant's wraps
// are gone after the refresh.
func TestGrantPerSubject(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store(t, 0)
		body := e.column(t, s)
		title, _ := field.NewColumn(e.kr, "conversations", "title", field.Bind("user_id"), field.PerSubject(s, "user_id"))
		if err := e.ledger.RecordColumns(ctx, e.kr, ledger.ColumnOf(body, "id"), ledger.ColumnOf(title, "id")); err != nil {
			t.Fatal(err)
		}
		e.insert(t, body, 1, "alice", "alice's body")
		e.insert(t, body, 2, "carol", "carol's body")
		titleCT, _ := title.SealString(field.RowInt(1).With("alice"), "alice's title")
		if _, _, err := s.MakePrivate(ctx, "carol", make([]byte, 32), PrivateOptions{}); err != nil {
			t.Fatal(err)
		}
		g, err := e.kr.Grant([]keyring.GrantScope{{Table: "messages", Column: "body", Namespace: "users"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ledger.RecordGrant(ctx, e.kr, ledger.GrantOf(g)); err != nil {
			t.Fatal(err)
		}
		if n, err := s.RefreshGrants(ctx, false); err != nil || n != 1 { // alice's key; carol's is private
			t.Fatalf("refresh: %d keys, %v", n, err)
		}
		e.insert(t, body, 3, "bob", "bob's body, sealed after the grant")
		keys, err := NewGrantKeys(Config{DB: e.db, Dialect: e.d, KeysTable: e.keys}, g, "messages", "body")
		if err != nil {
			t.Fatal(err)
		}
		reader, err := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(keys, "user_id"))
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]string{1: "alice's body", 3: "bob's body, sealed after the grant"} {
			if got, err := e.read(t, reader, id); err != nil || got != want {
				t.Errorf("row %d: %q, %v", id, got, err)
			}
		}
		if _, err := e.read(t, reader, 2); !errors.Is(err, field.ErrSubjectKeyMissing) {
			t.Errorf("a private user's value: %v", err)
		}
		if _, err := reader.SealString(field.RowInt(9).With("alice"), "x"); !errors.Is(err, keyring.ErrGrantSeals) {
			t.Errorf("a grant sealed: %v", err)
		}
		if _, err := field.GrantColumn(g, "conversations", "title", field.Bind("user_id"), field.PerSubject(keys, "user_id")); err == nil {
			t.Error("a grant of messages.body made a column of conversations.title")
		}
		asBody, _ := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(keys, "user_id"))
		if _, err := asBody.OpenString(field.RowInt(1).With("alice"), titleCT); err == nil {
			t.Error("alice's title opened as a body")
		}
		if err := s.Forget(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		fresh, _ := NewGrantKeys(Config{DB: e.db, Dialect: e.d, KeysTable: e.keys}, g, "messages", "body")
		forgotten, _ := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(fresh, "user_id"))
		if _, err := e.read(t, forgotten, 1); !errors.Is(err, field.ErrSubjectKeyMissing) {
			t.Errorf("a forgotten user's value: %v", err)
		}
		if _, err := e.ledger.RevokeGrant(ctx, e.kr, g.ID(), g.Created()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RefreshGrants(ctx, true); err != nil {
			t.Fatal(err)
		}
		revoked, _ := NewGrantKeys(Config{DB: e.db, Dialect: e.d, KeysTable: e.keys}, g, "messages", "body")
		after, _ := field.GrantColumn(g, "messages", "body", field.Bind("user_id"), field.PerSubject(revoked, "user_id"))
		if _, err := e.read(t, after, 3); !errors.Is(err, field.ErrSubjectKeyMissing) {
			t.Errorf("a revoked grant after the refresh: %v", err)
		}
	})
}

// TestScopedColumnAdded: a keys table of an earlier release, without the
// grants' column, gains it at Open and its keys keep working.
func TestScopedColumnAdded(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		engine := e.d.String()
		e.exec(t, fmt.Sprintf(`CREATE TABLE %s (namespace %[2]s NOT NULL, subject %[2]s NOT NULL, version BIGINT NOT NULL,
			first SMALLINT, wrapped %[3]s NOT NULL, created_at BIGINT NOT NULL, held SMALLINT NOT NULL DEFAULT 0, recovery %[3]s,
			PRIMARY KEY (namespace, subject, version), UNIQUE (namespace, subject, first))`, e.keys, sqltable.KeyText(engine, MaxSubjectLen), sqltable.Blob(engine)))
		s := e.store(t, 0)
		c := e.column(t, s)
		e.insert(t, c, 1, "alice", "hello")
		if got, err := e.read(t, c, 1); err != nil || got != "hello" {
			t.Fatalf("%q %v", got, err)
		}
		if _, err := e.db.Exec(fmt.Sprintf(`SELECT scoped FROM %s WHERE 1 = 0`, e.keys)); err != nil {
			t.Fatalf("no scoped column: %v", err)
		}
	})
}
