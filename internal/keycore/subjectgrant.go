package keycore

import (
	"encoding/binary"
	"fmt"
)

// derivation is the v4 scope a grant's key of sc is derived for: the
// column's own scope, or for a per-subject column the scope its subjects'
// column keys are wrapped under.
func (sc GrantScope) derivation() string {
	if sc.Namespace != "" {
		return SubjectGrantScope(sc.Namespace, sc.Table, sc.Column)
	}
	return FieldScope(sc.Table, sc.Column)
}

// SubjectGrantScope returns the scope under which a per-subject column's
// keys are wrapped for grants: "ward/subject-grant/v1" 0x00
// uvarint(len(namespace)) namespace uvarint(len(table)) table
// uvarint(len(column)) column. The subject store seals, beside each
// keyring-wrapped subject key, that key's K_scope for the column under the
// keyring's key for this scope (FORMAT.md, "Subject keys"); a grant holds
// the latter, and unwraps the former from the row on every use, so that
// forgetting the subject (deleting its rows) erases what the grant could
// read.
func SubjectGrantScope(namespace, table, column string) string {
	b := append([]byte("ward/subject-grant/v1"), 0)
	for _, s := range []string{namespace, table, column} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return string(b)
}

// SubjectScope returns, for a per-subject column the grant names, its
// namespace and the read-only scope that opens the column's wrapped keys
// (sealed for [SubjectGrantScope]), or [ErrNotGranted].
func (g *Grant) SubjectScope(table, column string) (string, *Scope, error) {
	for sc, keys := range g.keys {
		if sc.Namespace != "" && sc.Table == table && sc.Column == column {
			return sc.Namespace, &Scope{scope: sc.derivation(), fixed: keys, grant: g.id}, nil
		}
	}
	return "", nil, fmt.Errorf("%w: grant %s does not open %s.%s under subjects' keys", ErrNotGranted, g.id, table, column)
}

// ScopePayload returns what a grant's wrap of this subject key holds for
// scope: the subject key payload (FORMAT.md) with K_scope in place of the
// key's material. It is secret.
func (sk *SubjectKey) ScopePayload(scope string) ([]byte, error) {
	if sk.fixed {
		return nil, ErrNotGranted
	}
	m, err := sk.DeriveScope(scope)
	if err != nil {
		return nil, err
	}
	defer clear(m)
	p := []byte{subjectPayloadVersion, byte(sk.k.Algorithm)}
	p = binary.BigEndian.AppendUint32(p, sk.Version())
	return append(p, m...), nil
}

// GrantedSubjectKey returns the subject key a grant reader holds after
// unwrapping a [SubjectKey.ScopePayload]: it opens the v4 values of that
// one scope under the subject's key version, and refuses every other
// scope, v3 values ([ErrNotGranted]) and sealing ([ErrGrantSeals]).
func GrantedSubjectKey(payload []byte, scope string) (*SubjectKey, error) {
	if len(payload) < 6 || payload[0] != subjectPayloadVersion {
		return nil, fmt.Errorf("%w: a granted subject key payload", ErrMalformed)
	}
	alg := Algorithm(payload[1])
	version := binary.BigEndian.Uint32(payload[2:6])
	if !alg.valid() || len(payload) != 6+alg.KeySize() || version == 0 {
		return nil, fmt.Errorf("%w: a granted subject key payload", ErrMalformed)
	}
	if alg == XChaCha20Poly1305 && fipsOn() {
		return nil, ErrNotApproved
	}
	sk, err := NewSubjectKey(alg, version) // its own material is random and never used
	if err != nil {
		return nil, err
	}
	d, err := newScopedKey(alg, sk.k.head, payload[6:])
	if err != nil {
		return nil, err
	}
	sk.fixed = true
	sk.scopes.Store(&[]scopeEntry{{scope, d}})
	return sk, nil
}

// NoScope returns a read-only scope of table.column holding no key: what
// a per-subject column opened with a grant uses for values under keyring
// keys, which the grant does not cover ([ErrNotGranted]).
func (g *Grant) NoScope(table, column string) *Scope {
	return &Scope{scope: FieldScope(table, column), fixed: map[KeyID]*scopedKey{}, grant: g.id}
}
