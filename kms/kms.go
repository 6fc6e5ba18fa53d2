// Package kms keeps keys in a key-management service without paying the
// service on every call.
//
// A [KeyService] wraps and unwraps small secrets (data keys, keyring file
// keys) under a key it holds, bound to an encryption context. It is ward's
// one key-wrapping abstraction: keyrings are sealed by one (see package
// keyring), and so are envelope data keys. Providers live in sub-packages:
// kms/local (a master key from a file or the environment) and kms/awskms
// (AWS KMS through the official SDK); kms/plugin runs a provider that is
// an executable of its own (ward-kms-pkcs11); kms/kmsurl opens any of them
// from a URL.
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
	"fmt"
	"sort"
)

// KeyRef names a wrapping key publicly: the provider that holds it and the
// key's ID there (a master-key fingerprint, a key ARN or an alias). It is
// written next to what the key wraps, so a reader knows which key to ask
// for, and it is never secret.
type KeyRef struct {
	// Provider is the kind of service: "local", "awskms", or a plug-in's
	// scheme ("pkcs11"; package kms/plugin).
	Provider string
	// ID names the key within the provider.
	ID string
}

// String returns "provider:id", as in "local:mk-0123456789abcdef".
func (r KeyRef) String() string { return r.Provider + ":" + r.ID }

// KeyService wraps and unwraps small secrets under a key it holds.
// Implementations must authenticate the encryption context: Decrypt with
// another context than Encrypt's must fail with [ErrInvalidCiphertext].
type KeyService interface {
	// Key names the wrapping key.
	Key() KeyRef
	// Encrypt wraps plaintext (at most 4 KiB, as AWS KMS allows).
	Encrypt(ctx context.Context, plaintext []byte, encryptionContext map[string]string) ([]byte, error)
	// Decrypt unwraps what Encrypt returned. The result is secret.
	Decrypt(ctx context.Context, ciphertext []byte, encryptionContext map[string]string) ([]byte, error)
}

// DataKeyGenerator is an optional capability of a KeyService: generating a
// data key and its wrapped form in one call (AWS KMS GenerateDataKey).
// Services without it get a local random key wrapped with Encrypt.
type DataKeyGenerator interface {
	GenerateDataKey(ctx context.Context, size int, encryptionContext map[string]string) (plaintext, wrapped []byte, err error)
}

// Kinds of failure. A provider returns them inside a [*ServiceError];
// match them with errors.Is.
var (
	// ErrUnavailable means the service could not be reached or did not
	// answer in time (after retries): a transient condition, during which
	// cached data keys keep working.
	ErrUnavailable = errors.New("kms: service unavailable")
	// ErrThrottled means the service kept refusing for rate after retries:
	// transient, like ErrUnavailable.
	ErrThrottled = errors.New("kms: throttled")
	// ErrMisconfigured means the request cannot succeed until an operator
	// changes something: missing or invalid credentials, an unknown
	// region or endpoint, a malformed key ID. Retrying does not help.
	ErrMisconfigured = errors.New("kms: misconfigured")
	// ErrUnknownKey means the service does not know the key ID.
	ErrUnknownKey = errors.New("kms: unknown key")
	// ErrAccessDenied means the caller may not use the key (a policy
	// denies it, or the key is disabled).
	ErrAccessDenied = errors.New("kms: access denied")
	// ErrInvalidCiphertext means the service could not unwrap: a damaged
	// blob, another key, or another encryption context.
	ErrInvalidCiphertext = errors.New("kms: invalid ciphertext or encryption context")
	// ErrMalformed means an envelope ciphertext does not parse.
	ErrMalformed = errors.New("kms: malformed envelope")
	// ErrAuthentication means an envelope failed authentication: tampered,
	// or opened with another binding or encryption context.
	ErrAuthentication = errors.New("kms: envelope authentication failed")
)

// ServiceError reports a failed call to a key service. It matches its
// Kind (one of the sentinel errors above) and the provider's own error.
type ServiceError struct {
	// Op is the operation: "Encrypt", "Decrypt", "GenerateDataKey", …
	Op string
	// Key is the key the call used.
	Key KeyRef
	// Kind classifies the failure: ErrUnavailable, ErrMisconfigured, …
	Kind error
	// Err is the provider's error, if any.
	Err error
}

func (e *ServiceError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%v (%s with %v)", e.Kind, e.Op, e.Key)
	}
	return fmt.Sprintf("%v (%s with %v): %v", e.Kind, e.Op, e.Key, e.Err)
}

// Unwrap returns the kind and the provider's error.
func (e *ServiceError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Transient reports whether err is a failure that may go away by itself
// (unavailable or throttled), as opposed to one an operator must fix.
func Transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrThrottled)
}

// CanonicalContext encodes an encryption context unambiguously: the pair
// count, then the pairs sorted by key, each string length-prefixed (all
// lengths as uvarints).
func CanonicalContext(encryptionContext map[string]string) []byte {
	keys := make([]string, 0, len(encryptionContext))
	for k := range encryptionContext {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, encryptionContext[k])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
