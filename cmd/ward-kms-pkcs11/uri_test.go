package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms"
)

// TestParseURI: what the plug-in reads from an RFC 7512 URI, and what it
// refuses (a PIN in the URL, an attribute it does not know, a token named
// twice or not at all).
func TestParseURI(t *testing.T) {
	k, err := parseURI("pkcs11:token=my%20token;object=ward%3Bkey;type=secret-key?module-path=/usr/lib/m.so&pin-source=file:/run/pin")
	if err != nil || k.token != "my token" || k.object != "ward;key" || k.module != "/usr/lib/m.so" || k.pinSource != "file:/run/pin" {
		t.Fatalf("%+v %v", k, err)
	}
	if k.id() != "token=my token;object=ward;key" {
		t.Fatalf("id %q", k.id())
	}
	for _, bad := range []string{
		"pkcs12:token=a;object=b?module-path=/m",
		"pkcs11:token=a;object=b",
		"pkcs11:token=a?module-path=/m",
		"pkcs11:object=b?module-path=/m",
		"pkcs11:token=a;serial=1;object=b?module-path=/m",
		"pkcs11:token=a;object=b?module-path=/m&pin-value=1234",
		"pkcs11:token=a;object=b;type=private?module-path=/m",
		"pkcs11:token=a;object=b;objekt=c?module-path=/m",
		"pkcs11:token=a;object=b?module-path=/m&pin=1",
		"pkcs11:token=%zz;object=b?module-path=/m",
		"pkcs11:token;object=b?module-path=/m",
	} {
		if _, err := parseURI(bad); !errors.Is(err, kms.ErrMisconfigured) || strings.Contains(err.Error(), "1234") {
			t.Errorf("%s: %v, want misconfigured (and no PIN in the message)", bad, err)
		}
	}
}

// FuzzParseURI: any URI gives a key or a misconfigured error, never a
// panic; an accepted one names a module, a key and exactly one token.
func FuzzParseURI(f *testing.F) {
	f.Add("pkcs11:token=ward;object=wardkey?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin")
	f.Add("pkcs11:serial=1234;object=k;type=secret-key?module-path=/m")
	f.Add("pkcs11:token=a;object=b?module-path=/m&pin-value=1")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseURI(s)
		if err != nil {
			if !errors.Is(err, kms.ErrMisconfigured) {
				t.Fatalf("%v is not misconfigured", err)
			}
			return
		}
		if k.module == "" || k.object == "" || (k.token == "") == (k.serial == "") {
			t.Fatalf("accepted %+v", k)
		}
	})
}
