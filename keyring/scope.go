package keyring

import "github.com/wardlab/ward/internal/keycore"

// Scope seals and opens ciphertext v4 values of one scope under a
// keyring's keys, each derived for the scope on first use and cached until
// the keyring changes: the holder of one scope's derived keys (a [Grant])
// opens that scope and nothing else. Get one per scope with
// [Keyring.Scope] (the field layer keeps one per column); it is safe for
// concurrent use.
type Scope keycore.Scope

func (s *Scope) core() *keycore.Scope { return (*keycore.Scope)(s) }

// Name returns the scope.
func (s *Scope) Name() string { return s.core().Name() }

// Seal seals plaintext for ad as a v4 value of the scope.
func (s *Scope) Seal(plaintext, ad []byte) ([]byte, error) {
	return s.core().Seal(plaintext, ad)
}

// Open opens a v4 value of the scope sealed for ad.
func (s *Scope) Open(ciphertext, ad []byte) ([]byte, error) {
	return s.core().Open(ciphertext, ad)
}

// ContextMatches reports whether a v4 value's context check matches
// ad, without decrypting (a hint, as [Keyring.ContextMatches]).
func (s *Scope) ContextMatches(ciphertext, ad []byte) (bool, error) {
	return s.core().ContextMatches(ciphertext, ad)
}

// FieldScope returns the scope of the values of table.column (the field
// layer's columns): "ward/field/v4" 0x00 uvarint(len(table)) table
// uvarint(len(column)) column.
func FieldScope(table, column string) string { return keycore.FieldScope(table, column) }

// SubjectGrantScope returns the scope under which a per-subject column's
// keys are wrapped for grants: "ward/subject-grant/v1" 0x00
// uvarint(len(namespace)) namespace uvarint(len(table)) table
// uvarint(len(column)) column (FORMAT.md, "Subject keys").
func SubjectGrantScope(namespace, table, column string) string {
	return keycore.SubjectGrantScope(namespace, table, column)
}
