package keycore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardlab/ward/kms"
)

// GrantFormat is the format of a grant file (FORMAT.md).
const GrantFormat = "ward-grant/v1"

// maxGrantFile caps what LoadGrant reads.
const maxGrantFile = 1 << 20

// Errors of grants.
var (
	// ErrNotGranted means a grant was asked for something it does not
	// hold: another scope, a value of another version or key class.
	ErrNotGranted = errors.New("keyring: the grant does not cover this")
	// ErrGrantSeals means a grant, which only opens, was asked to seal.
	ErrGrantSeals = errors.New("keyring: a grant opens values; it never seals")
)

// GrantScope is a scope a grant opens: one column of one table. A column
// sealed under subjects' own keys (field.PerSubject) names its subjects'
// Namespace: the grant then holds the key that unwraps, from each
// subject's key row, that column's key of the subject (FORMAT.md, "Grant
// file v1"), never a subject's key.
type GrantScope struct {
	Table, Column string
	Namespace     string // per-subject columns only
}

// String returns "table.column".
func (s GrantScope) String() string { return s.Table + "." + s.Column }

// ParseGrantScope parses "table.column" (the table may hold dots, as
// "schema.table.column": the column is after the last one).
func ParseGrantScope(s string) (GrantScope, error) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || i == len(s)-1 {
		return GrantScope{}, fmt.Errorf("keyring: scope %q is not table.column", excerpt(s))
	}
	return GrantScope{Table: s[:i], Column: s[i+1:]}, nil
}

// A Grant holds, for a few scopes, the keys derived for them from some of
// a keyring's keys (ciphertext v4): a reader's key file that opens those
// columns and nothing else — not other columns, not values sealed under
// subject keys, and it never seals. Issue one with [Keyring.Grant], store
// it with [Grant.Marshal] under a key service of the reader's, load it
// with [LoadGrant].
type Grant struct {
	id      string
	keyring string
	created time.Time
	scopes  []GrantScope
	ids     []KeyID
	keys    map[GrantScope]map[KeyID]*scopedKey
	raw     []grantKey // what Marshal seals
}

// grantKey is one derived key in a grant file's sealed payload.
type grantKey struct {
	Table     string `json:"table"`
	Column    string `json:"column"`
	Namespace string `json:"namespace,omitempty"` // a per-subject column's
	ID        uint32 `json:"id"`
	Algorithm string `json:"alg"`
	Material  []byte `json:"material"`
}

// Grant derives, for each scope, the key of each key in ids (every key that
// is not disabled when ids is empty) for that scope, and returns them as a
// new grant with a fresh ID.
func (kr *Keyring) Grant(scopes []GrantScope, ids ...KeyID) (*Grant, error) {
	if len(scopes) == 0 {
		return nil, errors.New("keyring: a grant needs at least one scope")
	}
	s := kr.load()
	if len(ids) == 0 {
		for _, k := range s.keys {
			if k.State != Disabled {
				ids = append(ids, k.ID)
			}
		}
	}
	var b [8]byte
	rand.Read(b[:])
	g := &Grant{id: "g-" + hex.EncodeToString(b[:]), keyring: kr.ID(), created: time.Now().UTC().Truncate(time.Second)}
	for _, sc := range scopes {
		if sc.Table == "" || sc.Column == "" {
			return nil, fmt.Errorf("keyring: scope %q needs a table and a column", sc)
		}
		for _, id := range ids {
			k, ok := s.byID[id]
			if !ok || k.State == Disabled {
				return nil, &KeyError{ID: id, Err: ErrUnknownKey, Hint: "a grant derives from keys the keyring holds and has not disabled"}
			}
			if k.Algorithm == XChaCha20Poly1305 && fipsOn() {
				return nil, ErrNotApproved
			}
			m, err := hkdfScope(k.material, sc.derivation(), k.Algorithm.KeySize())
			if err != nil {
				return nil, err
			}
			g.raw = append(g.raw, grantKey{Table: sc.Table, Column: sc.Column, Namespace: sc.Namespace, ID: uint32(id), Algorithm: k.Algorithm.String(), Material: m})
		}
	}
	if err := g.build(); err != nil {
		return nil, err
	}
	return g, nil
}

// build fills the grant's scopes, IDs and keys from its raw keys.
func (g *Grant) build() error {
	g.keys = map[GrantScope]map[KeyID]*scopedKey{}
	for _, r := range g.raw {
		alg, err := ParseAlgorithm(r.Algorithm)
		if err != nil || len(r.Material) != alg.KeySize() || r.ID == 0 || r.Table == "" || r.Column == "" {
			return fmt.Errorf("%w: a grant key of the wrong size or algorithm", ErrCorruptKeyring)
		}
		if alg == XChaCha20Poly1305 && fipsOn() {
			return ErrNotApproved
		}
		head := uint64(version4)<<56 | uint64(classKeyring)<<48 | uint64(alg)<<40 | uint64(r.ID)<<8
		k, err := newScopedKey(alg, head, r.Material)
		if err != nil {
			return err
		}
		sc := GrantScope{r.Table, r.Column, r.Namespace}
		if g.keys[sc] == nil {
			g.keys[sc] = map[KeyID]*scopedKey{}
			g.scopes = append(g.scopes, sc)
		}
		g.keys[sc][KeyID(r.ID)] = k
		if !slices.Contains(g.ids, KeyID(r.ID)) {
			g.ids = append(g.ids, KeyID(r.ID))
		}
	}
	slices.SortFunc(g.scopes, func(a, b GrantScope) int { return strings.Compare(a.String(), b.String()) })
	slices.Sort(g.ids)
	return nil
}

// ID returns the grant's ID ("g-" and 16 hex digits), which the ledger
// records.
func (g *Grant) ID() string { return g.id }

// Keyring returns the ID of the keyring the grant derives from.
func (g *Grant) Keyring() string { return g.keyring }

// Created returns when the grant was issued.
func (g *Grant) Created() time.Time { return g.created }

// Scopes returns the scopes the grant opens, sorted.
func (g *Grant) Scopes() []GrantScope { return slices.Clone(g.scopes) }

// Keys returns the IDs of the keyring keys the grant derives from, sorted.
func (g *Grant) Keys() []KeyID { return slices.Clone(g.ids) }

// String names the grant without its keys.
func (g *Grant) String() string {
	return fmt.Sprintf("grant{id=%s keyring=%s scopes=%v keys=%v material=REDACTED}", g.id, g.keyring, g.scopes, g.ids)
}

// Scope returns the read-only scope of table.column, or [ErrNotGranted]
// (also for a per-subject column: see [Grant.SubjectScope]).
func (g *Grant) Scope(table, column string) (*Scope, error) {
	keys, ok := g.keys[GrantScope{table, column, ""}]
	if !ok {
		return nil, fmt.Errorf("%w: grant %s opens %v, not %s.%s", ErrNotGranted, g.id, g.scopes, table, column)
	}
	return &Scope{scope: FieldScope(table, column), fixed: keys, grant: g.id}, nil
}

// grantDoc is a grant file: its visible header, the wrapped file key and
// the sealed keys.
type grantDoc struct {
	Format     string     `json:"format"`
	ID         string     `json:"id"`
	Keyring    string     `json:"keyring"`
	Created    time.Time  `json:"created"`
	Scopes     []string   `json:"scopes"`
	Keys       []string   `json:"keys"`
	Wrap       storedWrap `json:"wrap"`
	WrappedKey string     `json:"wrapped_key"`
	Sealed     string     `json:"sealed"`
}

// aad binds the sealed keys and the wrapped file key to every header
// field, each length-prefixed.
func (d *grantDoc) aad() []byte {
	var b []byte
	add := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	add(d.Format)
	add(d.ID)
	add(d.Keyring)
	add(d.Created.UTC().Format(time.RFC3339))
	add(strings.Join(d.Scopes, "\n"))
	add(strings.Join(d.Keys, ","))
	add(d.Wrap.Provider)
	add(d.Wrap.KeyID)
	return b
}

// grantKeyContext is the encryption context a key service wraps a grant's
// file key under.
func grantKeyContext(aad []byte) map[string]string {
	sum := sha256.Sum256(aad)
	return map[string]string{"ward:purpose": "grant", "ward:aad-sha256": hex.EncodeToString(sum[:])}
}

// Marshal seals the grant under ks — a key service of the reader's (a KMS
// key, or a master key of its own), not the keyring's — as a JSON file
// whose header (ID, keyring, scopes, key IDs) is readable and
// authenticated.
func (g *Grant) Marshal(ctx context.Context, ks kms.KeyService) ([]byte, error) {
	ref := ks.Key()
	doc := grantDoc{Format: GrantFormat, ID: g.id, Keyring: g.keyring, Created: g.created, Wrap: storedWrap{Provider: ref.Provider, KeyID: ref.ID}}
	for _, s := range g.scopes {
		doc.Scopes = append(doc.Scopes, s.String())
	}
	for _, id := range g.ids {
		doc.Keys = append(doc.Keys, id.String())
	}
	plain, err := json.Marshal(struct {
		Keys []grantKey `json:"keys"`
	}{g.raw})
	if err != nil {
		return nil, fmt.Errorf("keyring: encoding a grant: %w", err)
	}
	defer clear(plain)
	aad := doc.aad()
	var fileKey [32]byte
	rand.Read(fileKey[:])
	defer clear(fileKey[:])
	start := time.Now()
	wrapped, err := ks.Encrypt(ctx, fileKey[:], grantKeyContext(aad))
	kms.Observe(ks, "Encrypt", start, err)
	if err != nil {
		return nil, fmt.Errorf("keyring: wrapping the grant's file key with %v: %w", ref, err)
	}
	doc.WrappedKey = base64.StdEncoding.EncodeToString(wrapped)
	doc.Sealed = base64.StdEncoding.EncodeToString(gcm(fileKey[:]).Seal(nil, nil, plain, aad))
	return json.MarshalIndent(doc, "", "  ")
}

// UnmarshalGrant opens a grant file sealed by [Grant.Marshal] under ks.
func UnmarshalGrant(ctx context.Context, data []byte, ks kms.KeyService) (*Grant, error) {
	var doc grantDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: a grant file: %v", ErrCorruptKeyring, err)
	}
	if doc.Format != GrantFormat {
		return nil, &VersionError{What: "grant", Version: fmt.Sprintf("%.40q", doc.Format)}
	}
	ref := ks.Key()
	if doc.Wrap.Provider != ref.Provider || doc.Wrap.KeyID != ref.ID {
		return nil, fmt.Errorf("%w: the grant is sealed under %s:%s, given %v", ErrWrongWrapper, excerpt(doc.Wrap.Provider), excerpt(doc.Wrap.KeyID), ref)
	}
	wrapped, err1 := base64.StdEncoding.DecodeString(doc.WrappedKey)
	sealed, err2 := base64.StdEncoding.DecodeString(doc.Sealed)
	if err1 != nil || err2 != nil || len(wrapped) > maxWrappedKey {
		return nil, fmt.Errorf("%w: a grant's wrapped_key or sealed field", ErrCorruptKeyring)
	}
	aad := doc.aad()
	start := time.Now()
	fileKey, err := ks.Decrypt(ctx, wrapped, grantKeyContext(aad))
	kms.Observe(ks, "Decrypt", start, err)
	if err != nil {
		if kms.Transient(err) {
			return nil, fmt.Errorf("keyring: unwrapping the grant's file key: %w", err)
		}
		return nil, fmt.Errorf("%w: unwrapping the grant's file key: %w", ErrCorruptKeyring, err)
	}
	defer clear(fileKey)
	if len(fileKey) != 32 {
		return nil, fmt.Errorf("%w: a grant file key of %d bytes", ErrCorruptKeyring, len(fileKey))
	}
	g := gcm(fileKey)
	if len(sealed) < g.Overhead() {
		return nil, fmt.Errorf("%w: a grant's sealed keys truncated", ErrCorruptKeyring)
	}
	plain, err := g.Open(nil, nil, sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: a grant failed authentication", ErrCorruptKeyring)
	}
	defer clear(plain)
	return grantFromDoc(&doc, plain)
}

// grantFromDoc builds a grant from an authenticated document and its
// opened payload, checking that the header says what the keys are.
func grantFromDoc(doc *grantDoc, plain []byte) (*Grant, error) {
	var p struct {
		Keys []grantKey `json:"keys"`
	}
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("%w: a grant's keys: %v", ErrCorruptKeyring, err)
	}
	g := &Grant{id: doc.ID, keyring: doc.Keyring, created: doc.Created, raw: p.Keys}
	if err := g.build(); err != nil {
		return nil, err
	}
	var scopes, ids []string
	for _, s := range g.scopes {
		scopes = append(scopes, s.String())
	}
	for _, id := range g.ids {
		ids = append(ids, id.String())
	}
	if !slices.Equal(scopes, doc.Scopes) || !slices.Equal(ids, doc.Keys) {
		return nil, fmt.Errorf("%w: a grant's header does not name its keys", ErrCorruptKeyring)
	}
	return g, nil
}

// LoadGrant reads and opens a grant file.
func LoadGrant(ctx context.Context, path string, ks kms.KeyService) (*Grant, error) {
	data, err := readBounded(path, maxGrantFile, "a grant file: ")
	if err != nil {
		return nil, err
	}
	return UnmarshalGrant(ctx, data, ks)
}
