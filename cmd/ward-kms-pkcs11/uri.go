package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/wardlab/ward/internal/boundfile"
	"github.com/wardlab/ward/kms"
)

// keyURI is an RFC 7512 PKCS#11 URI naming an AES key in a token:
//
//	pkcs11:token=LABEL;object=LABEL?module-path=PATH&pin-source=file:PATH
//
// The token is named by token (its label) or serial; the key by object
// (its label). The PIN comes from pin-source, a file (file:PATH or PATH)
// read at each call; pin-value is refused, since a URL is given on
// command lines and kept in shell histories.
type keyURI struct {
	token, serial, object string
	module, pinSource     string
}

// misconfigured is an error of the kms kind an operator fixes.
func misconfigured(format string, args ...any) error {
	return fmt.Errorf("%w: %s", kms.ErrMisconfigured, fmt.Sprintf(format, args...))
}

// parseURI reads what the plug-in needs from a pkcs11: URI, refusing
// attributes it does not know (a typo must not select another token).
func parseURI(raw string) (keyURI, error) {
	var k keyURI
	rest, ok := strings.CutPrefix(raw, "pkcs11:")
	if !ok {
		return k, misconfigured("a PKCS#11 key URL starts with pkcs11: (RFC 7512)")
	}
	path, query, _ := strings.Cut(rest, "?")
	for attr := range strings.SplitSeq(path, ";") {
		name, value, err := attribute(attr)
		if err != nil {
			return k, err
		}
		switch name {
		case "token":
			k.token = value
		case "serial":
			k.serial = value
		case "object":
			k.object = value
		case "type":
			if value != "secret-key" {
				return k, misconfigured("type=%s: the key is a secret key", value)
			}
		default:
			return k, misconfigured("the path attribute %q is not one this plug-in reads (token, serial, object, type)", name)
		}
	}
	for attr := range strings.SplitSeq(query, "&") {
		if attr == "" {
			continue
		}
		name, value, err := attribute(attr)
		if err != nil {
			return k, err
		}
		switch name {
		case "module-path":
			k.module = value
		case "pin-source":
			k.pinSource = value
		case "pin-value":
			return k, misconfigured("pin-value puts the PIN in the URL (command lines, shell histories): name a file with pin-source=file:PATH")
		default:
			return k, misconfigured("the query attribute %q is not one this plug-in reads (module-path, pin-source)", name)
		}
	}
	switch {
	case k.module == "":
		return k, misconfigured("module-path names the PKCS#11 module (e.g. /usr/lib/softhsm/libsofthsm2.so)")
	case k.object == "":
		return k, misconfigured("object names the key's label in the token")
	case (k.token == "") == (k.serial == ""):
		return k, misconfigured("name the token by exactly one of token (its label) and serial")
	}
	return k, nil
}

// attribute splits name=value and percent-decodes the value.
func attribute(attr string) (string, string, error) {
	name, value, ok := strings.Cut(attr, "=")
	if !ok || name == "" {
		return "", "", misconfigured("%.60q is not an attribute (name=value)", attr)
	}
	v, err := url.PathUnescape(value)
	if err != nil {
		return "", "", misconfigured("the value of %s: %v", name, err)
	}
	return name, v, nil
}

// id is the key's public name: its token and label, never the module's
// path or the PIN's source.
func (k keyURI) id() string {
	if k.token != "" {
		return "token=" + k.token + ";object=" + k.object
	}
	return "serial=" + k.serial + ";object=" + k.object
}

// pin reads the PIN from pin-source (at most 256 bytes, a regular file),
// without its trailing line break.
func (k keyURI) pin() (string, error) {
	if k.pinSource == "" {
		return "", misconfigured("pin-source=file:PATH names the file holding the token's user PIN")
	}
	path := strings.TrimPrefix(k.pinSource, "file:")
	if strings.HasPrefix(path, "|") {
		return "", misconfigured("pin-source runs no command: name a file")
	}
	b, err := boundfile.Read(path, 256)
	if err != nil {
		return "", misconfigured("reading the PIN file: %v", err)
	}
	defer clear(b)
	return strings.TrimRight(string(b), "\r\n"), nil
}
