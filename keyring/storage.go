package keyring

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Wrapper protects the key that seals a stored keyring: a local master key
// ([MasterKey]) or a key in a KMS. Wrap and Unwrap must authenticate aad.
type Wrapper interface {
	// Provider names the kind of wrapper, such as "local" or "awskms".
	Provider() string
	// KeyID names the wrapping key publicly (a fingerprint, a KMS key
	// ARN); it is recorded in the stored keyring.
	KeyID() string
	// Wrap encrypts a data key.
	Wrap(ctx context.Context, dataKey, aad []byte) ([]byte, error)
	// Unwrap decrypts a data key wrapped by Wrap.
	Unwrap(ctx context.Context, wrapped, aad []byte) ([]byte, error)
}

// Errors returned by [Load].
var (
	// ErrWrongWrapper means the keyring was sealed under another master key
	// or KMS key than the one given.
	ErrWrongWrapper = errors.New("keyring: keyring is sealed under a different key")
	// ErrCorruptKeyring means the stored keyring failed authentication or
	// does not parse: it was tampered with or damaged.
	ErrCorruptKeyring = errors.New("keyring: stored keyring is corrupt or was tampered with")
)

// FileFormat is the format tag of stored keyrings.
const FileFormat = "ward-keyring/v1"

// maxWrappedKey caps the wrapped data key read from a file; KMS ciphertext
// blobs are far smaller.
const maxWrappedKey = 4096

// maxKeyringFile caps how much Load reads.
const maxKeyringFile = 16 << 20

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
	Root     []byte       `json:"root"`
	RootSalt []byte       `json:"root_salt"`
	Keys     []payloadKey `json:"keys"`
}

type payloadKey struct {
	ID        uint32    `json:"id"`
	Algorithm string    `json:"alg"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Material  []byte    `json:"material"`
}

// Marshal seals the keyring under w: a fresh AES-256-GCM file key encrypts
// the key list and w wraps the file key. The result is a JSON document
// safe to store on disk.
func (kr *Keyring) Marshal(ctx context.Context, w Wrapper) ([]byte, error) {
	s := kr.load()
	p := payload{Root: kr.root[:], RootSalt: kr.rootSalt[:]}
	for _, k := range s.keys {
		p.Keys = append(p.Keys, payloadKey{ID: uint32(k.ID), Algorithm: k.Algorithm.String(), State: k.State.String(), Created: k.Created, Material: k.material})
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("keyring: encoding: %w", err)
	}
	defer clear(plain)

	doc := stored{Format: FileFormat, Wrap: storedWrap{Provider: w.Provider(), KeyID: w.KeyID()}}
	aad := doc.aad()
	var fileKey [32]byte
	rand.Read(fileKey[:])
	defer clear(fileKey[:])
	wrapped, err := w.Wrap(ctx, fileKey[:], aad)
	if err != nil {
		return nil, fmt.Errorf("keyring: wrapping with %s key %s: %w", doc.Wrap.Provider, doc.Wrap.KeyID, err)
	}
	g := gcm(fileKey[:])
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(plain)+g.Overhead())
	rand.Read(nonce)
	sealed := g.Seal(nonce, nonce, plain, aad)
	doc.WrappedKey = base64.StdEncoding.EncodeToString(wrapped)
	doc.Sealed = base64.StdEncoding.EncodeToString(sealed)
	return json.MarshalIndent(doc, "", "  ")
}

// aad binds the sealed payload and the wrapped key to the visible header.
func (d *stored) aad() []byte {
	return fmt.Appendf(nil, "%s\x00%s\x00%s", d.Format, d.Wrap.Provider, d.Wrap.KeyID)
}

// Unmarshal opens a keyring sealed by Marshal. It returns [ErrWrongWrapper]
// when data names another wrapping key than w, [ErrCorruptKeyring] when it
// fails authentication, and a [VersionError] for an unknown format.
func Unmarshal(ctx context.Context, data []byte, w Wrapper) (*Keyring, error) {
	var doc stored
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
	}
	if doc.Format != FileFormat {
		return nil, &VersionError{What: "keyring", Version: fmt.Sprintf("%q", doc.Format)}
	}
	if doc.Wrap.Provider != w.Provider() || doc.Wrap.KeyID != w.KeyID() {
		return nil, fmt.Errorf("%w: sealed under %s key %s, given %s key %s", ErrWrongWrapper,
			doc.Wrap.Provider, doc.Wrap.KeyID, w.Provider(), w.KeyID())
	}
	wrapped, err1 := base64.StdEncoding.DecodeString(doc.WrappedKey)
	sealed, err2 := base64.StdEncoding.DecodeString(doc.Sealed)
	if err1 != nil || err2 != nil || len(wrapped) > maxWrappedKey {
		return nil, fmt.Errorf("%w: bad wrapped_key or sealed field", ErrCorruptKeyring)
	}
	aad := doc.aad()
	fileKey, err := w.Unwrap(ctx, wrapped, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: unwrapping the file key: %w", ErrCorruptKeyring, err)
	}
	defer clear(fileKey)
	if len(fileKey) != 32 {
		return nil, fmt.Errorf("%w: file key has %d bytes", ErrCorruptKeyring, len(fileKey))
	}
	g := gcm(fileKey)
	if len(sealed) < g.NonceSize()+g.Overhead() {
		return nil, fmt.Errorf("%w: sealed payload truncated", ErrCorruptKeyring)
	}
	plain, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], aad)
	if err != nil {
		return nil, fmt.Errorf("%w: payload authentication failed", ErrCorruptKeyring)
	}
	defer clear(plain)
	var p payload
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrCorruptKeyring, err)
	}
	return fromPayload(&p)
}

func fromPayload(p *payload) (*Keyring, error) {
	kr := &Keyring{}
	if len(p.Root) != len(kr.root) || len(p.RootSalt) != len(kr.rootSalt) {
		return nil, fmt.Errorf("%w: bad derivation root", ErrCorruptKeyring)
	}
	copy(kr.root[:], p.Root)
	copy(kr.rootSalt[:], p.RootSalt)
	clear(p.Root)
	s := &snapshot{byID: map[KeyID]*key{}}
	for _, pk := range p.Keys {
		alg, err := ParseAlgorithm(pk.Algorithm)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
		}
		st, err := parseState(pk.State)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptKeyring, err)
		}
		id := KeyID(pk.ID)
		if id == 0 || s.byID[id] != nil {
			return nil, fmt.Errorf("%w: zero or duplicate key ID %v", ErrCorruptKeyring, id)
		}
		k, err := newKey(KeyInfo{ID: id, Algorithm: alg, State: st, Created: pk.Created}, pk.Material)
		if err != nil {
			return nil, fmt.Errorf("%w: key %v: bad material", ErrCorruptKeyring, id)
		}
		s.keys = append(s.keys, k)
		s.byID[id] = k
		if st == Primary {
			if s.primary != nil {
				return nil, fmt.Errorf("%w: more than one primary key", ErrCorruptKeyring)
			}
			s.primary = k
		}
	}
	if s.primary == nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptKeyring, ErrNoPrimary)
	}
	kr.snap.Store(s)
	return kr, nil
}

// Save seals the keyring under w and writes it to path atomically (a
// temporary file renamed into place), with mode 0600.
func (kr *Keyring) Save(ctx context.Context, path string, w Wrapper) error {
	data, err := kr.Marshal(ctx, w)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".keyring-*")
	if err != nil {
		return fmt.Errorf("keyring: saving: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("keyring: saving: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("keyring: saving: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keyring: saving: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("keyring: saving: %w", err)
	}
	return nil
}

// Load reads and opens a keyring written by Save.
func Load(ctx context.Context, path string, w Wrapper) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyringFile+1))
	if err != nil {
		return nil, fmt.Errorf("keyring: reading %s: %w", path, err)
	}
	if len(data) > maxKeyringFile {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorruptKeyring, path, maxKeyringFile)
	}
	kr, err := Unmarshal(ctx, data, w)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return kr, nil
}

func gcm(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("keyring: internal error: " + err.Error()) // key length is fixed
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic("keyring: internal error: " + err.Error())
	}
	return g
}
