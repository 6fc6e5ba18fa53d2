// Package local is a kms.KeyService backed by a local master key (a file or
// WARD_MASTER_KEY): for development, tests and the embedded default. It
// wraps with AES-256-GCM (keyring.MasterKey) and binds the encryption
// context as associated data. It offers no custody beyond the master key
// itself.
package local

import (
	"context"
	"errors"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
)

// Service wraps data keys under a master key.
type Service struct{ mk *keyring.MasterKey }

var _ kms.KeyService = (*Service)(nil)

// New returns a Service over mk.
func New(mk *keyring.MasterKey) *Service { return &Service{mk: mk} }

// Provider returns "local".
func (s *Service) Provider() string { return "local" }

// KeyID returns the master key's fingerprint.
func (s *Service) KeyID() string { return s.mk.KeyID() }

// Encrypt wraps plaintext: nonce(12) || ciphertext || tag.
func (s *Service) Encrypt(ctx context.Context, plaintext []byte, ec map[string]string) ([]byte, error) {
	return s.mk.Wrap(ctx, plaintext, kms.CanonicalContext(ec))
}

// Decrypt unwraps what Encrypt returned.
func (s *Service) Decrypt(ctx context.Context, ciphertext []byte, ec map[string]string) ([]byte, error) {
	out, err := s.mk.Unwrap(ctx, ciphertext, kms.CanonicalContext(ec))
	if err != nil {
		return nil, errors.Join(kms.ErrInvalidCiphertext, err)
	}
	return out, nil
}
