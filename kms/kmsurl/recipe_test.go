package kmsurl_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
)

// vault is CONTRIBUTING.md's recipe for a KMS provider, followed once: a
// throwaway key service holding AES-256-GCM keys in memory (as a real
// provider holds them in a remote service). Steps 1–3 are the provider's
// package; step 4 is the line that makes URLs open it.
type vault struct {
	id   string
	aead cipher.AEAD
}

// Step 1: name the key.
func (v *vault) Key() kms.KeyRef { return kms.KeyRef{Provider: "vault-test", ID: v.id} }

// Step 2: wrap and unwrap, authenticating the encryption context.
func (v *vault) Encrypt(_ context.Context, pt []byte, ec map[string]string) ([]byte, error) {
	return v.aead.Seal(nil, nil, pt, kms.CanonicalContext(ec)), nil // the AEAD draws the nonce, as FIPS 140-3 requires
}

func (v *vault) Decrypt(_ context.Context, ct []byte, ec map[string]string) ([]byte, error) {
	if len(ct) < v.aead.Overhead() {
		return nil, v.fail("Decrypt", kms.ErrInvalidCiphertext, nil)
	}
	pt, err := v.aead.Open(nil, nil, ct, kms.CanonicalContext(ec))
	if err != nil {
		return nil, v.fail("Decrypt", kms.ErrInvalidCiphertext, err)
	}
	return pt, nil
}

// Step 3: classify every failure into one of kms's kinds.
func (v *vault) fail(op string, kind, err error) error {
	return &kms.ServiceError{Op: op, Key: v.Key(), Kind: kind, Err: err}
}

var keys = map[string]*vault{}

func init() {
	// Step 4: one line (here a Register call; in the repository, a line
	// of kmsurl's providers table).
	kmsurl.Register("vault-test", func(_ context.Context, u *url.URL, _ func(string) string) (kms.KeyService, error) {
		v, ok := keys[u.Host]
		if !ok {
			return nil, &kms.ServiceError{Op: "Open", Key: kms.KeyRef{Provider: "vault-test", ID: u.Host}, Kind: kms.ErrUnknownKey}
		}
		return v, nil
	})
}

// TestProviderRecipe: the throwaway provider opens from a URL, wraps a
// keyring file that loads again, serves envelopes, and its failures
// match kms's kinds.
func TestProviderRecipe(t *testing.T) {
	ctx := context.Background()
	k := make([]byte, 32)
	rand.Read(k)
	b, _ := aes.NewCipher(k)
	a, _ := cipher.NewGCMWithRandomNonce(b)
	keys["k1"] = &vault{id: "k1", aead: a}

	ks, err := kmsurl.Open(ctx, "vault-test://k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kr.json")
	kr, err := keyring.Create(ctx, path, ks, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := kr.Seal([]byte("hello"), []byte("ctx"))
	again, err := keyring.Load(ctx, path, ks)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := again.Open(ct, []byte("ctx")); err != nil || string(pt) != "hello" {
		t.Fatal(pt, err)
	}
	env := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
	sealed, err := env.Seal(ctx, []byte("msg"), nil, map[string]string{"tenant": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Open(ctx, sealed, nil, map[string]string{"tenant": "b"}); err == nil {
		t.Fatal("another encryption context opened the envelope")
	}
	if _, err := kmsurl.Open(ctx, "vault-test://nope", nil); !errors.Is(err, kms.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := ks.Decrypt(ctx, []byte("short"), nil); !errors.Is(err, kms.ErrInvalidCiphertext) || kms.Transient(err) {
		t.Fatalf("bad ciphertext: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a scheme registered twice")
		}
	}()
	kmsurl.Register("vault-test", nil)
}
