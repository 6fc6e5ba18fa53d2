// Package ormkit is what ward's ORM integrations (contrib/gorm, bun, ent,
// sqlc) share, so that they cannot drift apart: the struct-tag syntax,
// and blind indexes built once per indexed column. Row keys come from
// [field.RowOf], bound values from [field.RowKey.With], for every adapter
// alike.
package ormkit

import (
	"strings"
	"sync"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// ParseTag parses a `ward:"…"` struct tag: semicolon-separated keys, each
// with a value after a colon or alone as a flag, case-insensitive keys:
//
//	key:ID;bind:UserID,Role;index:Email;binary
//
// gives {"key": "ID", "bind": "UserID,Role", "index": "Email", "binary":
// "true"}.
func ParseTag(tag string) map[string]string {
	m := map[string]string{}
	for _, part := range strings.Split(tag, ";") {
		k, v, hasValue := strings.Cut(strings.TrimSpace(part), ":")
		if k = strings.ToLower(strings.TrimSpace(k)); k == "" {
			continue
		}
		if v = strings.TrimSpace(v); !hasValue {
			v = "true"
		}
		m[k] = v
	}
	return m
}

// List splits a tag value such as "UserID, Role" into its names.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Indexes builds the blind index of each indexed column once (keyed by
// table and column, case-folding normalisation, as every adapter indexes)
// and shares it between goroutines.
type Indexes struct {
	kr *keyring.Keyring
	m  sync.Map // "table\x00column" → *field.BlindIndex
}

// NewIndexes returns an empty cache over kr.
func NewIndexes(kr *keyring.Keyring) *Indexes { return &Indexes{kr: kr} }

// Get returns the blind index of table.column.
func (x *Indexes) Get(table, column string) (*field.BlindIndex, error) {
	key := table + "\x00" + column
	if idx, ok := x.m.Load(key); ok {
		return idx.(*field.BlindIndex), nil
	}
	idx, err := field.NewBlindIndex(x.kr, table, column, field.WithNormalizer(field.NormalizeFold))
	if err != nil {
		return nil, err
	}
	v, _ := x.m.LoadOrStore(key, idx)
	return v.(*field.BlindIndex), nil
}

// Compute returns the blind index of value in table.column, for queries.
func (x *Indexes) Compute(table, column, value string) ([]byte, error) {
	idx, err := x.Get(table, column)
	if err != nil {
		return nil, err
	}
	return idx.Compute(value), nil
}
