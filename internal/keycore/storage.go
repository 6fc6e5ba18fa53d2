package keycore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wardlab/ward/kms"
)

// File formats of a stored keyring. Marshal writes FileFormat; Unmarshal
// also reads FileFormatV1, so files written by earlier releases keep
// opening. Older releases refuse FileFormat, rather than dropping the
// generation they would not know about.
const (
	FileFormat   = "ward-keyring/v2"
	FileFormatV1 = "ward-keyring/v1"
)

// maxWrappedKey caps the wrapped file key read from a file; KMS ciphertext
// blobs are far smaller.
const maxWrappedKey = 4096

// stored is the on-disk JSON document. Only format, wrap and the wrapped
// key are readable; the key list is inside sealed.
type stored struct {
	Format     string     `json:"format"`
	Wrap       storedWrap `json:"wrap"`
	WrappedKey string     `json:"wrapped_key"`
	Sealed     string     `json:"sealed"`
}

type storedWrap struct {
	Provider string `json:"provider"`
	KeyID    string `json:"key_id"`
}

type payload struct {
	Generation uint64       `json:"generation,omitempty"` // absent in v1
	Root       []byte       `json:"root"`
	RootSalt   []byte       `json:"root_salt"`
	Keys       []payloadKey `json:"keys"`
	// StateKeys and Anchors: see anchor.go. Absent in files written
	// before them.
	StateKeys []payloadStateKey `json:"state_keys,omitempty"`
	Anchors   map[string]Anchor `json:"anchors,omitempty"`
	// Removed and Retained: see retained.go. Absent in files written
	// before them.
	Removed  []uint32          `json:"removed,omitempty"`
	Retained []payloadRetained `json:"retained,omitempty"`
}

type payloadStateKey struct {
	Epoch  uint64 `json:"epoch"`
	Secret []byte `json:"secret"`
}

type payloadKey struct {
	ID        uint32    `json:"id"`
	Algorithm string    `json:"alg"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Material  []byte    `json:"material"`
}

// Marshal seals the keyring under ks (format v2): a fresh AES-256-GCM file
// key encrypts the key list, and ks wraps the file key. The result is a
// JSON document safe to store on disk.
func (kr *Keyring) Marshal(ctx context.Context, ks kms.KeyService) ([]byte, error) {
	return kr.marshal(ctx, kr.load(), ks)
}

func (kr *Keyring) marshal(ctx context.Context, s *snapshot, ks kms.KeyService) ([]byte, error) {
	p := payload{Generation: s.generation, Root: kr.root[:], RootSalt: kr.rootSalt[:]}
	for _, k := range s.keys {
		p.Keys = append(p.Keys, payloadKey{ID: uint32(k.ID), Algorithm: k.Algorithm.String(), State: k.State.String(), Created: k.Created, Material: k.material})
	}
	for _, sk := range s.stateKeys {
		p.StateKeys = append(p.StateKeys, payloadStateKey{Epoch: sk.epoch, Secret: sk.secret})
	}
	if len(s.anchors) > 0 {
		p.Anchors = s.anchors
	}
	s.marshalRetained(&p)
	plain, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("keyring: encoding: %w", err)
	}
	defer clear(plain)

	ref := ks.Key()
	doc := stored{Format: FileFormat, Wrap: storedWrap{Provider: ref.Provider, KeyID: ref.ID}}
	aad := doc.aad()
	var fileKey [32]byte
	rand.Read(fileKey[:])
	defer clear(fileKey[:])
	start := time.Now()
	wrapped, err := ks.Encrypt(ctx, fileKey[:], fileKeyContext(aad))
	kms.Observe(ks, "Encrypt", start, err)
	if err != nil {
		return nil, fmt.Errorf("keyring: wrapping the file key with %v: %w", ref, err)
	}
	sealed := gcm(fileKey[:]).Seal(nil, nil, plain, aad) // nonce ‖ ciphertext ‖ tag
	doc.WrappedKey = base64.StdEncoding.EncodeToString(wrapped)
	doc.Sealed = base64.StdEncoding.EncodeToString(sealed)
	return json.MarshalIndent(doc, "", "  ")
}

// aad binds the sealed payload and the wrapped key to the visible header.
func (d *stored) aad() []byte {
	return fmt.Appendf(nil, "%s\x00%s\x00%s", d.Format, d.Wrap.Provider, d.Wrap.KeyID)
}

// fileKeyContext is the encryption context under which a key service wraps
// a keyring's file key: the header enters as a digest.
func fileKeyContext(aad []byte) map[string]string {
	sum := sha256.Sum256(aad)
	return map[string]string{"ward:purpose": "keyring", "ward:aad-sha256": hex.EncodeToString(sum[:])}
}

// v1Unwrapper is implemented by the local master key (kms/local), for
// files in format v1 with provider "local", which bound the header as raw
// associated data instead of an encryption context.
type v1Unwrapper interface {
	DecryptKeyringV1(wrapped, associatedData []byte) ([]byte, error)
}

// Unmarshal opens a keyring sealed by Marshal, or written in format v1. It
// returns [ErrWrongWrapper] when data names another wrapping key than ks,
// [ErrCorruptKeyring] when it fails authentication or does not parse, and
// a [VersionError] for an unknown format. The keyring lives in memory; use
// [Load] for one that saves its changes.
func Unmarshal(ctx context.Context, data []byte, ks kms.KeyService) (*Keyring, error) {
	kr, _, err := unmarshal(ctx, data, ks)
	return kr, err
}

func unmarshal(ctx context.Context, data []byte, ks kms.KeyService) (*Keyring, *stored, error) {
	var doc stored
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
	}
	if doc.Format != FileFormat && doc.Format != FileFormatV1 {
		return nil, nil, &VersionError{What: "keyring", Version: fmt.Sprintf("%.40q", doc.Format)}
	}
	wrapped, err1 := base64.StdEncoding.DecodeString(doc.WrappedKey)
	sealed, err2 := base64.StdEncoding.DecodeString(doc.Sealed)
	if err1 != nil || err2 != nil || len(wrapped) > maxWrappedKey {
		return nil, nil, fmt.Errorf("%w: bad wrapped_key or sealed field", ErrCorruptKeyring)
	}
	fileKey, err := unwrapFileKey(ctx, &doc, wrapped, ks)
	if err != nil {
		return nil, nil, err
	}
	defer clear(fileKey)
	g := gcm(fileKey)
	if len(sealed) < g.Overhead() { // the nonce and the tag
		return nil, nil, fmt.Errorf("%w: sealed payload truncated", ErrCorruptKeyring)
	}
	plain, err := g.Open(nil, nil, sealed, doc.aad())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: payload authentication failed", ErrCorruptKeyring)
	}
	defer clear(plain)
	var p payload
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, nil, fmt.Errorf("%w: payload: %v", ErrCorruptKeyring, err)
	}
	if doc.Format == FileFormatV1 {
		p.Generation = 0
	}
	kr, err := fromPayload(&p)
	return kr, &doc, err
}

// unwrapFileKey checks that ks is the key the document names and asks it
// for the file key.
func unwrapFileKey(ctx context.Context, doc *stored, wrapped []byte, ks kms.KeyService) ([]byte, error) {
	ref := ks.Key()
	provider := doc.Wrap.Provider
	legacyLocal := doc.Format == FileFormatV1 && provider == "local"
	if doc.Format == FileFormatV1 {
		// v1 named KMS-wrapped keyrings "kms:<provider>" and master keys
		// "local"; both are one provider now.
		provider = strings.TrimPrefix(provider, "kms:")
	}
	if provider != ref.Provider || doc.Wrap.KeyID != ref.ID {
		return nil, fmt.Errorf("%w: sealed under %s:%s, given %v", ErrWrongWrapper, doc.Wrap.Provider, doc.Wrap.KeyID, ref)
	}
	var fileKey []byte
	var err error
	if legacyLocal {
		v1, ok := ks.(v1Unwrapper)
		if !ok {
			return nil, fmt.Errorf("%w: a v1 local keyring needs the local master key", ErrWrongWrapper)
		}
		fileKey, err = v1.DecryptKeyringV1(wrapped, doc.aad())
	} else {
		start := time.Now()
		fileKey, err = ks.Decrypt(ctx, wrapped, fileKeyContext(doc.aad()))
		kms.Observe(ks, "Decrypt", start, err)
	}
	if err != nil {
		if kms.Transient(err) {
			return nil, fmt.Errorf("keyring: unwrapping the file key: %w", err)
		}
		return nil, fmt.Errorf("%w: unwrapping the file key: %w", ErrCorruptKeyring, err)
	}
	if len(fileKey) != 32 {
		clear(fileKey)
		return nil, fmt.Errorf("%w: file key has %d bytes", ErrCorruptKeyring, len(fileKey))
	}
	return fileKey, nil
}

func fromPayload(p *payload) (*Keyring, error) {
	kr := &Keyring{}
	defer clear(p.Root)
	if len(p.Root) != len(kr.root) || len(p.RootSalt) != len(kr.rootSalt) {
		return nil, fmt.Errorf("%w: bad derivation root", ErrCorruptKeyring)
	}
	copy(kr.root[:], p.Root)
	copy(kr.rootSalt[:], p.RootSalt)
	kr.id = keyringID(kr.rootSalt)
	s := &snapshot{byID: map[KeyID]*key{}, generation: p.Generation, anchors: map[string]Anchor{}}
	if err := s.loadAnchors(p); err != nil {
		return nil, err
	}
	for _, pk := range p.Keys {
		k, err := keyFromPayload(pk)
		if err != nil {
			return nil, err
		}
		if s.byID[k.ID] != nil {
			return nil, fmt.Errorf("%w: duplicate key ID %v", ErrCorruptKeyring, k.ID)
		}
		s.keys = append(s.keys, k)
		s.byID[k.ID] = k
		if k.State == Primary {
			if s.primary != nil {
				return nil, fmt.Errorf("%w: more than one primary key", ErrCorruptKeyring)
			}
			s.primary = k
		}
	}
	if s.primary == nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptKeyring, ErrNoPrimary)
	}
	if err := s.loadRetained(p); err != nil {
		return nil, err
	}
	kr.publish(s)
	return kr, nil
}

func keyFromPayload(pk payloadKey) (*key, error) {
	alg, err := ParseAlgorithm(pk.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
	}
	st, err := parseState(pk.State)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
	}
	if pk.ID == 0 {
		return nil, fmt.Errorf("%w: zero key ID", ErrCorruptKeyring)
	}
	k, err := newKey(KeyInfo{ID: KeyID(pk.ID), Algorithm: alg, State: st, Created: pk.Created}, pk.Material)
	if err != nil {
		return nil, fmt.Errorf("%w: key %v: bad material", ErrCorruptKeyring, KeyID(pk.ID))
	}
	return k, nil
}

// gcm is AES-256-GCM drawing its own 96-bit nonces, which it puts before
// the ciphertext (the layout of the file's sealed field since v1), as the
// FIPS 140-3 module requires.
func gcm(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keyring: internal error: " + err.Error()) // key length is fixed
	}
	g, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		panic("keyring: internal error: " + err.Error())
	}
	return g
}

// loadAnchors validates and loads the state keys and anchors of a payload.
func (s *snapshot) loadAnchors(p *payload) error {
	var last uint64
	for i, sk := range p.StateKeys {
		if len(sk.Secret) != 32 || sk.Epoch == 0 || (i > 0 && sk.Epoch <= last) || sk.Epoch > p.Generation {
			return fmt.Errorf("%w: bad state key", ErrCorruptKeyring)
		}
		last = sk.Epoch
		s.stateKeys = append(s.stateKeys, stateKey{epoch: sk.Epoch, secret: sk.Secret})
	}
	if len(p.Anchors) > maxAnchors {
		return fmt.Errorf("%w: %d anchors", ErrCorruptKeyring, len(p.Anchors))
	}
	for db, a := range p.Anchors {
		if !databaseIDPattern.MatchString(db) || !a.valid() {
			return fmt.Errorf("%w: bad anchor", ErrCorruptKeyring)
		}
		s.anchors[db] = a
	}
	return nil
}
