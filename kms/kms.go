// Package kms keeps data keys in a key-management service without paying
// the service on every call.
//
// A [KeyService] wraps and unwraps small secrets (data keys) under a key it
// holds, bound to an encryption context; providers live in sub-packages:
// kms/local (a master key from a file or the environment) and kms/awskms
// (AWS KMS through the official SDK). [Open] picks one from a URL.
//
// [Envelope] is what most users want: each value is sealed locally with
// AES-256-GCM under a data key that the KMS generated and wrapped; the
// wrapped key travels in the ciphertext. A bounded cache reuses a data key
// for many values (limits on age, messages and bytes) and remembers
// unwrapped keys for opening, so the KMS is called once per data key rather
// than once per value: KMS-grade key custody at near-local speed.
package kms

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
)

// KeyService wraps and unwraps secrets under a key held by a KMS.
// Implementations must authenticate the encryption context: Decrypt with
// another context than Encrypt's must fail.
type KeyService interface {
	// Encrypt wraps plaintext (at most 4 KiB, as AWS KMS allows).
	Encrypt(ctx context.Context, plaintext []byte, ec map[string]string) ([]byte, error)
	// Decrypt unwraps what Encrypt returned. The result is secret.
	Decrypt(ctx context.Context, ciphertext []byte, ec map[string]string) ([]byte, error)
	// KeyID names the wrapping key publicly (an ARN, an alias, a fingerprint).
	KeyID() string
	// Provider names the kind of service, such as "local" or "awskms".
	Provider() string
}

// DataKeyGenerator is a KeyService that generates data keys in one call
// (AWS KMS GenerateDataKey). Services without it get a local random key
// wrapped with Encrypt.
type DataKeyGenerator interface {
	GenerateDataKey(ctx context.Context, size int, ec map[string]string) (plaintext, wrapped []byte, err error)
}

// Errors. Providers wrap their service's errors in these.
var (
	// ErrUnavailable means the service could not be reached or did not
	// answer in time (after retries). Cached data keys keep working.
	ErrUnavailable = errors.New("kms: service unavailable")
	// ErrUnknownKey means the service does not know the key ID.
	ErrUnknownKey = errors.New("kms: unknown key")
	// ErrAccessDenied means the caller may not use the key.
	ErrAccessDenied = errors.New("kms: access denied")
	// ErrInvalidCiphertext means the service could not unwrap: a damaged
	// blob, another key, or another encryption context.
	ErrInvalidCiphertext = errors.New("kms: invalid ciphertext or encryption context")
	// ErrThrottled means the service kept refusing for rate after retries.
	ErrThrottled = errors.New("kms: throttled")
	// ErrMalformed means an envelope ciphertext does not parse.
	ErrMalformed = errors.New("kms: malformed envelope")
	// ErrAuthentication means an envelope failed authentication: tampered,
	// or opened with another context or encryption context.
	ErrAuthentication = errors.New("kms: envelope authentication failed")
)

// CanonicalContext encodes an encryption context unambiguously: pairs
// sorted by key, each string length-prefixed.
func CanonicalContext(ec map[string]string) []byte {
	keys := make([]string, 0, len(ec))
	for k := range ec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(ec[k])))
		b = append(b, ec[k]...)
	}
	return b
}
