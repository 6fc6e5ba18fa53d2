package kms

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/wardlab/ward/keyring"
)

// KeyringWrapper lets a KeyService seal stored keyrings: ward keyring new
// --kms URL. The keyring's associated data enters the encryption context
// as a digest.
func KeyringWrapper(ks KeyService) keyring.Wrapper { return wrapper{ks} }

type wrapper struct{ ks KeyService }

func (w wrapper) Provider() string { return "kms:" + w.ks.Provider() }
func (w wrapper) KeyID() string    { return w.ks.KeyID() }

func (w wrapper) ec(aad []byte) map[string]string {
	sum := sha256.Sum256(aad)
	return map[string]string{"ward:purpose": "keyring", "ward:aad-sha256": hex.EncodeToString(sum[:])}
}

func (w wrapper) Wrap(ctx context.Context, dataKey, aad []byte) ([]byte, error) {
	return w.ks.Encrypt(ctx, dataKey, w.ec(aad))
}

func (w wrapper) Unwrap(ctx context.Context, wrapped, aad []byte) ([]byte, error) {
	return w.ks.Decrypt(ctx, wrapped, w.ec(aad))
}
