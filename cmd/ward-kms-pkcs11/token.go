package main

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/ThalesGroup/crypto11"
	"github.com/miekg/pkcs11"

	"github.com/wardlab/ward/kms"
)

// token is a logged-in session with the URI's token.
type token struct {
	ctx *crypto11.Context
	uri keyURI
}

// login opens the module, finds the token and logs in with the PIN.
func login(k keyURI) (*token, error) {
	if _, err := os.Stat(k.module); err != nil {
		return nil, misconfigured("the PKCS#11 module %s: %v", k.module, errors.Unwrap(err))
	}
	pin, err := k.pin()
	if err != nil {
		return nil, err
	}
	ctx, err := crypto11.Configure(&crypto11.Config{Path: k.module, TokenLabel: k.token, TokenSerial: k.serial, Pin: pin, MaxSessions: 2})
	if err != nil {
		return nil, classify(err, "logging in to "+k.tokenName())
	}
	return &token{ctx: ctx, uri: k}, nil
}

// tokenName names the token in messages.
func (k keyURI) tokenName() string {
	if k.token != "" {
		return fmt.Sprintf("the token labelled %q", k.token)
	}
	return fmt.Sprintf("the token with serial %q", k.serial)
}

// key finds the URI's AES key in the token: exactly one secret key of
// its label (two would make the choice the token's).
func (t *token) key() (*crypto11.SecretKey, error) {
	keys, err := t.ctx.FindKeys(nil, []byte(t.uri.object))
	switch {
	case err != nil:
		return nil, classify(err, "finding the key")
	case len(keys) == 0:
		return nil, fmt.Errorf("%w: no key labelled %q in %s (deleted, or never created: ward-kms-pkcs11 create-key)", kms.ErrUnknownKey, t.uri.object, t.uri.tokenName())
	case len(keys) > 1:
		return nil, misconfigured("%s holds %d keys labelled %q: give each key a label of its own", t.uri.tokenName(), len(keys), t.uri.object)
	}
	return keys[0], nil
}

// codeIn matches a PKCS#11 return value in an error's text: crypto11
// formats the module's errors with %v, so they no longer unwrap.
var codeIn = regexp.MustCompile(`pkcs11: 0x([0-9A-Fa-f]{1,8}): CKR_`)

// code returns the PKCS#11 return value err holds.
func code(err error) (pkcs11.Error, bool) {
	var rv pkcs11.Error
	if errors.As(err, &rv) {
		return rv, true
	}
	m := codeIn.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	v, perr := strconv.ParseUint(m[1], 16, 32)
	return pkcs11.Error(v), perr == nil
}

// classify gives a PKCS#11 failure its kms kind. A missing token or
// module is the operator's to fix; a refused PIN is access denied; a
// device or session failure is transient. CKR_GENERAL_ERROR, which
// SoftHSM also returns for a GCM tag that does not verify, is left to the
// caller (unwrap tells the two apart).
func classify(err error, doing string) error {
	rv, ok := code(err)
	if !ok {
		if strings.Contains(err.Error(), "could not find PKCS#11 token") {
			return fmt.Errorf("%w: %s: no such token in the module", kms.ErrMisconfigured, doing)
		}
		return fmt.Errorf("%w: %s: %v", kms.ErrMisconfigured, doing, err)
	}
	kind := kms.ErrUnavailable
	switch rv {
	case pkcs11.CKR_PIN_INCORRECT, pkcs11.CKR_PIN_INVALID, pkcs11.CKR_PIN_LEN_RANGE, pkcs11.CKR_PIN_EXPIRED:
		return fmt.Errorf("%w: %s: the token refused the PIN (%v)", kms.ErrAccessDenied, doing, rv)
	case pkcs11.CKR_PIN_LOCKED, pkcs11.CKR_USER_NOT_LOGGED_IN, pkcs11.CKR_KEY_FUNCTION_NOT_PERMITTED:
		kind = kms.ErrAccessDenied
	case pkcs11.CKR_TOKEN_NOT_RECOGNIZED, pkcs11.CKR_SLOT_ID_INVALID, pkcs11.CKR_MECHANISM_INVALID, pkcs11.CKR_KEY_TYPE_INCONSISTENT:
		kind = kms.ErrMisconfigured
	case pkcs11.CKR_ENCRYPTED_DATA_INVALID, pkcs11.CKR_ENCRYPTED_DATA_LEN_RANGE:
		kind = kms.ErrInvalidCiphertext
	}
	return fmt.Errorf("%w: %s: %v", kind, doing, rv)
}

// blobVersion starts every blob the plug-in wraps.
const blobVersion = 1

// domain starts the associated data of every wrap: the plug-in, its blob
// version and the key's public name, then the encryption context.
func (t *token) ad(context []byte) []byte {
	ad := append([]byte("ward-kms-pkcs11\x00\x01\x00"), t.uri.id()...)
	return append(append(ad, 0), context...)
}

// gcm is AES-GCM computed inside the token with the URI's key.
func (t *token) gcm() (cipher.AEAD, error) {
	key, err := t.key()
	if err != nil {
		return nil, err
	}
	a, err := key.NewGCM()
	if err != nil {
		return nil, classify(err, "starting AES-GCM in the token")
	}
	return a, nil
}

// wrap seals plaintext in the token: version ‖ nonce(12) ‖ ciphertext ‖
// tag(16), the nonce from crypto/rand.
func (t *token) wrap(plaintext, context []byte) ([]byte, error) {
	a, err := t.gcm()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+a.NonceSize(), 1+a.NonceSize()+len(plaintext)+a.Overhead())
	out[0] = blobVersion
	rand.Read(out[1:])
	return a.Seal(out, out[1:], plaintext, t.ad(context)), nil
}

// unwrap opens a blob of wrap. A tag that does not verify is
// invalid-ciphertext; but SoftHSM reports it as CKR_GENERAL_ERROR, the
// code of a failing device too, so on that code the token is asked to seal
// and open a value of its own: if it can, the blob was at fault.
func (t *token) unwrap(blob, context []byte) ([]byte, error) {
	a, err := t.gcm()
	if err != nil {
		return nil, err
	}
	if len(blob) < 1+a.NonceSize()+a.Overhead() || blob[0] != blobVersion {
		return nil, fmt.Errorf("%w: not a blob of ward-kms-pkcs11 version %d", kms.ErrInvalidCiphertext, blobVersion)
	}
	pt, err := a.Open(nil, blob[1:1+a.NonceSize()], blob[1+a.NonceSize():], t.ad(context))
	if err == nil {
		return pt, nil
	}
	if rv, ok := code(err); ok && rv == pkcs11.CKR_GENERAL_ERROR && t.works(a) {
		return nil, fmt.Errorf("%w: the tag does not verify under %s (another key, or another encryption context)", kms.ErrInvalidCiphertext, t.uri.id())
	}
	return nil, classify(err, "unwrapping in the token")
}

// works reports whether the token seals and opens a fresh value with a.
func (t *token) works(a cipher.AEAD) bool {
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	probe := []byte("ward-kms-pkcs11 probe")
	ct := a.Seal(nil, nonce, probe, nil)
	pt, err := a.Open(nil, nonce, ct, nil)
	return err == nil && string(pt) == string(probe)
}

// createKey makes the URI's key in the token: AES-256, kept in the token
// (CKA_TOKEN), never leaving it in the clear (CKA_SENSITIVE, not
// CKA_EXTRACTABLE), for encryption and decryption only.
func (t *token) createKey() error {
	if keys, err := t.ctx.FindKeys(nil, []byte(t.uri.object)); err == nil && len(keys) > 0 {
		return misconfigured("%s already holds a key labelled %q", t.uri.tokenName(), t.uri.object)
	}
	id := make([]byte, 16)
	rand.Read(id)
	template, err := crypto11.NewAttributeSetWithIDAndLabel(id, []byte(t.uri.object))
	if err != nil {
		return err
	}
	for attr, v := range map[crypto11.AttributeType]bool{pkcs11.CKA_SENSITIVE: true, pkcs11.CKA_EXTRACTABLE: false, pkcs11.CKA_WRAP: false, pkcs11.CKA_UNWRAP: false} {
		if err := template.Set(attr, v); err != nil {
			return err
		}
	}
	if _, err := t.ctx.GenerateSecretKeyWithAttributes(template, 256, crypto11.CipherAES); err != nil {
		return classify(err, "creating the key")
	}
	return nil
}
