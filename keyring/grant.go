package keyring

import (
	"context"
	"time"

	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/kms"
)

// GrantFormat is the format of a grant file (FORMAT.md).
const GrantFormat = keycore.GrantFormat

// GrantScope is a scope a grant opens: one column of one table. A column
// sealed under subjects' own keys (field.PerSubject) names its subjects'
// Namespace: the grant then holds the key that unwraps, from each
// subject's key row, that column's key of the subject (FORMAT.md, "Grant
// file v1"), never a subject's key. Its String is "table.column".
type GrantScope = keycore.GrantScope

// ParseGrantScope parses "table.column" (the table may hold dots, as
// "schema.table.column": the column is after the last one).
func ParseGrantScope(s string) (GrantScope, error) { return keycore.ParseGrantScope(s) }

// A Grant holds, for a few scopes, the keys derived for them from some of
// a keyring's keys (ciphertext v4): a reader's key file that opens those
// columns and nothing else — not other columns, not values sealed under
// subject keys. It never seals, but its holder can forge values of its
// scopes that the keyring opens as genuine: a grant is a read capability
// that a writer of those columns must not be given (SECURITY.md). Issue
// one with [Keyring.Grant], store it with [Grant.Marshal] under a key
// service of the reader's, load it with [LoadGrant].
type Grant keycore.Grant

func (g *Grant) core() *keycore.Grant { return (*keycore.Grant)(g) }

func grant(g *keycore.Grant, err error) (*Grant, error) {
	if err != nil {
		return nil, err
	}
	return (*Grant)(g), nil
}

// LoadGrant reads and opens a grant file.
func LoadGrant(ctx context.Context, path string, ks kms.KeyService) (*Grant, error) {
	return grant(keycore.LoadGrant(ctx, path, ks))
}

// UnmarshalGrant opens a grant file sealed by [Grant.Marshal] under ks.
func UnmarshalGrant(ctx context.Context, data []byte, ks kms.KeyService) (*Grant, error) {
	return grant(keycore.UnmarshalGrant(ctx, data, ks))
}

// ID returns the grant's ID ("g-" and 16 hex digits), which the ledger
// records.
func (g *Grant) ID() string { return g.core().ID() }

// Keyring returns the ID of the keyring the grant derives from.
func (g *Grant) Keyring() string { return g.core().Keyring() }

// Created returns when the grant was issued.
func (g *Grant) Created() time.Time { return g.core().Created() }

// Scopes returns the scopes the grant opens, sorted.
func (g *Grant) Scopes() []GrantScope { return g.core().Scopes() }

// Keys returns the IDs of the keyring keys the grant derives from, sorted.
func (g *Grant) Keys() []KeyID { return g.core().Keys() }

// String names the grant without its keys.
func (g *Grant) String() string { return g.core().String() }

// Scope returns the read-only scope of table.column, or [ErrNotGranted]
// (also for a per-subject column, which package field/subject opens).
func (g *Grant) Scope(table, column string) (*Scope, error) {
	s, err := g.core().Scope(table, column)
	if err != nil {
		return nil, err
	}
	return (*Scope)(s), nil
}

// Marshal seals the grant under ks — a key service of the reader's (a KMS
// key, or a master key of its own), not the keyring's — as a JSON file
// whose header (ID, keyring, scopes, key IDs) is readable and
// authenticated.
func (g *Grant) Marshal(ctx context.Context, ks kms.KeyService) ([]byte, error) {
	return g.core().Marshal(ctx, ks)
}
