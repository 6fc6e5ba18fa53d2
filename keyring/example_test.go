package keyring_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// Create a keyring file sealed under a master key, seal a value, rotate
// (saved before it takes effect), and open the old value from a fresh
// load.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ward-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keyring.json")

	mk := local.Generate() // in production: local.Load, or a KMS key (package kms)
	kr, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	ct, _ := kr.Seal([]byte("hello"), []byte("greeting"))
	if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
		log.Fatal(err)
	}

	loaded, err := keyring.Load(ctx, path, mk)
	if err != nil {
		log.Fatal(err)
	}
	pt, err := loaded.Open(ct, []byte("greeting"))
	fmt.Println(string(pt), err, loaded.Generation())
	for _, k := range loaded.Keys() {
		fmt.Println(k.Algorithm, k.State)
	}
	// Output:
	// hello <nil> 2
	// AES-256-GCM decrypt-only
	// AES-256-GCM primary
}

// Each failure has its own error.
func ExampleKeyring_Open() {
	kr, _ := keyring.New(keyring.AES256GCM)
	ct, _ := kr.Seal([]byte("hello"), []byte("a"))
	_, err := kr.Open(ct, []byte("b"))
	fmt.Println(err)
	ct[len(ct)-1] ^= 1
	_, err = kr.Open(ct, []byte("a"))
	fmt.Println(err)
	_, err = kr.Open(ct[:5], []byte("a"))
	fmt.Println(err)
	// Output:
	// keyring: ciphertext belongs to another context or is damaged
	// keyring: message authentication failed
	// keyring: ciphertext truncated
}

// Two writers of one file: the one that saved second with an outdated copy
// is refused, and keeps working after a reload.
func ExampleKeyring_Reload() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ward-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keyring.json")
	mk := local.Generate()
	service, _ := keyring.Create(ctx, path, mk, keyring.AES256GCM)

	operator, _ := keyring.Load(ctx, path, mk)
	keyring.NewManager(operator).AddPrimary(ctx, keyring.AES256GCM)

	_, err := keyring.NewManager(service).AddPrimary(ctx, keyring.AES256GCM)
	fmt.Println(errors.Is(err, keyring.ErrStale))
	fmt.Println(service.Reload(ctx), service.Primary().ID == operator.Primary().ID)
	// Output:
	// true
	// <nil> true
}
