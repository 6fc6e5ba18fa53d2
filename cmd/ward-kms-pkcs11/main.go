// Command ward-kms-pkcs11 is ward's key-service plug-in for PKCS#11
// tokens and HSMs (FORMAT.md, "Key-service plug-ins"). Put it on PATH and
// give ward an RFC 7512 URI of an AES key in the token:
//
//	ward --kms 'pkcs11:token=ward;object=wardkey?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/ward/pin' keyring new
//
// Run with no arguments, it answers one request of the protocol on its
// standard input and output: it wraps and unwraps with AES-256-GCM
// computed inside the token, whose key never leaves it. With
// "create-key URI" it creates that key: AES-256, sensitive and not
// extractable.
//
// It is a program of its own, with cgo and the PKCS#11 module it loads,
// so that neither reaches the ward binary or the library.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run is the command: the protocol with no arguments, create-key URI
// otherwise. It returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		if err := plugin.Serve(context.Background(), stdin, stdout, handler{}); err != nil {
			fmt.Fprintf(stderr, "ward-kms-pkcs11: %v\n", err)
			return 1
		}
		return 0
	case len(args) == 2 && args[0] == "create-key":
		id, err := createKey(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "ward-kms-pkcs11: create-key: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "created pkcs11:%s (AES-256, sensitive, not extractable)\n", id)
		return 0
	}
	fmt.Fprintln(stderr, "usage: ward-kms-pkcs11                 (the plug-in protocol on stdin and stdout)\n       ward-kms-pkcs11 create-key URI  (an AES-256 key in the token, pkcs11:token=…;object=…?module-path=…&pin-source=file:…)")
	return 2
}

// createKey creates the key uri names and returns its public name.
func createKey(uri string) (string, error) {
	k, err := parseURI(uri)
	if err != nil {
		return "", err
	}
	t, err := login(k)
	if err != nil {
		return "", err
	}
	defer t.ctx.Close()
	return k.id(), t.createKey()
}

// handler serves the protocol: each operation logs in, works and closes.
type handler struct{}

var _ plugin.Handler = handler{}

// with runs f with a session of uri's token.
func with(uri string, f func(*token) ([]byte, error)) ([]byte, error) {
	k, err := parseURI(uri)
	if err != nil {
		return nil, err
	}
	t, err := login(k)
	if err != nil {
		return nil, err
	}
	defer t.ctx.Close()
	return f(t)
}

// Describe names the key after checking it is in the token.
func (handler) Describe(_ context.Context, uri string) (kms.KeyRef, error) {
	var id string
	_, err := with(uri, func(t *token) ([]byte, error) {
		_, err := t.key()
		id = t.uri.id()
		return nil, err
	})
	return kms.KeyRef{Provider: "pkcs11", ID: id}, err
}

// Wrap seals plaintext with the token's key, bound to context.
func (handler) Wrap(_ context.Context, uri string, plaintext, context []byte) ([]byte, error) {
	return with(uri, func(t *token) ([]byte, error) { return t.wrap(plaintext, context) })
}

// Unwrap opens what Wrap returned for the same context.
func (handler) Unwrap(_ context.Context, uri string, blob, context []byte) ([]byte, error) {
	return with(uri, func(t *token) ([]byte, error) { return t.unwrap(blob, context) })
}
