package plugin_test

import (
	"context"
	"fmt"
	"os"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

// A plug-in's main: one request in, one response out. Built as
// ward-kms-<scheme> and put on PATH, it serves every key URL of its
// scheme to the ward CLI's --kms and to kmsurl.Open.
func ExampleServe() {
	var h plugin.Handler // the provider's: Describe, Wrap, Unwrap
	if h == nil {
		return // (a real plug-in has one)
	}
	if err := plugin.Serve(context.Background(), os.Stdin, os.Stdout, h); err != nil {
		os.Exit(1)
	}
}

// Opening a key behind a plug-in, as kmsurl.Open does for a scheme no
// provider registered.
func ExampleOpen() {
	ks, err := plugin.Open(context.Background(), "pkcs11:token=ward;object=wardkey?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/ward/pin")
	if err != nil {
		return // ward-kms-pkcs11 is not on this machine's PATH
	}
	var _ kms.KeyService = ks
	fmt.Println(ks.Key())
}
