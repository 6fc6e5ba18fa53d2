package keyring_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/wardlab/ward/keyring"
)

// Create a keyring, store it sealed under a master key, rotate, and open a
// value sealed before the rotation.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ward-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keyring.json")

	mk := keyring.GenerateMasterKey() // in production: keyring.LoadMasterKey
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		log.Fatal(err)
	}
	ct, _ := kr.Seal([]byte("hello"), []byte("greeting"))

	kr.Rotate(keyring.AES256GCM)
	if err := kr.Save(ctx, path, mk); err != nil {
		log.Fatal(err)
	}

	loaded, err := keyring.Load(ctx, path, mk)
	if err != nil {
		log.Fatal(err)
	}
	pt, err := loaded.Open(ct, []byte("greeting"))
	fmt.Println(string(pt), err)
	for _, k := range loaded.Keys() {
		fmt.Println(k.Algorithm, k.State)
	}
	// Output:
	// hello <nil>
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
	// keyring: ciphertext belongs to another context
	// keyring: message authentication failed
	// keyring: ciphertext truncated
}
