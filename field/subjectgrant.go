package field

import (
	"encoding/json"
	"fmt"
)

// SubjectGrantFormat names the JSON form of a [SubjectGrant].
const SubjectGrantFormat = "ward-subject-grant/v1"

// SubjectGrant is what opens one subject's ciphertext v4 values of one
// per-subject column, and nothing else: the column's K_scope of each of
// the subject's key versions asked for (FORMAT.md, "Subject grants"). A
// service hands it, per request, to a reader in another process (the chat
// hands a conversation's messages to an assistant worker), which opens
// that user's values of that column and cannot derive another column's
// keys, open another user's values, or open v3 values (whose key is the
// subject key itself). It holds secrets: it is never written to disk or
// logged, and a worker drops it with the request.
type SubjectGrant struct {
	Format  string            `json:"format"`
	Table   string            `json:"table"`
	Column  string            `json:"column"`
	Subject string            `json:"subject"`
	Keys    []SubjectGrantKey `json:"keys"`
}

// SubjectGrantKey is the scoped key of one version of the subject's key.
type SubjectGrantKey struct {
	Version   uint32 `json:"version"`
	Algorithm string `json:"alg"`
	Material  []byte `json:"material"` // K_scope, base64 in JSON
}

// String names the grant without its keys.
func (g *SubjectGrant) String() string {
	return fmt.Sprintf("SubjectGrant(%s.%s, %d keys)", g.Table, g.Column, len(g.Keys))
}

// Marshal returns the grant's JSON form (secret).
func (g *SubjectGrant) Marshal() ([]byte, error) { return json.Marshal(g) }

// Destroy zeroes the grant's key material.
func (g *SubjectGrant) Destroy() {
	for _, k := range g.Keys {
		clear(k.Material)
	}
}

// SubjectGrant returns the grant of subject's values of this per-subject
// column sealed under the given key versions. It refuses a column without
// subject keys, and passes on the store's refusals (a forgotten subject, a
// private user's key outside their session: [ErrSubjectLocked]).
func (c *Column) SubjectGrant(subject string, versions ...uint32) (*SubjectGrant, error) {
	if c.subjects == nil {
		return nil, fmt.Errorf("field: %s.%s has no subject keys", c.table, c.name)
	}
	g := &SubjectGrant{Format: SubjectGrantFormat, Table: c.table, Column: c.name, Subject: subject}
	seen := map[uint32]bool{}
	for _, v := range versions {
		if seen[v] {
			continue
		}
		seen[v] = true
		sk, err := c.subjects.OpeningKey(subject, v)
		if err != nil {
			g.Destroy()
			return nil, fmt.Errorf("field: a subject grant of %s.%s: %w", c.table, c.name, err)
		}
		m, err := sk.DeriveScope(c.scopeName)
		if err != nil {
			g.Destroy()
			return nil, fmt.Errorf("field: a subject grant of %s.%s: %w", c.table, c.name, err)
		}
		g.Keys = append(g.Keys, SubjectGrantKey{Version: v, Algorithm: sk.Algorithm().String(), Material: m})
	}
	return g, nil
}
