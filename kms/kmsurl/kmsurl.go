// Package kmsurl opens a kms.KeyService from a URL:
//
//	local://PATH    master key in a file (local:// alone: $WARD_MASTER_KEY)
//
// Other providers live in their own modules and register their scheme
// when imported, as database/sql drivers do:
//
//	import _ "github.com/wardlab/ward/kms/awskms" // awskms://alias/NAME?region=R
//
// A scheme no provider registered is served by a plug-in, an executable
// ward-kms-<scheme> on PATH (package kms/plugin), so a provider with a
// heavy SDK or a cgo module lives outside ward's binaries:
//
//	pkcs11:token=ward;object=wardkey?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin
//
// Adding a provider (GCP, Azure, Vault) is one package implementing
// kms.KeyService whose init calls Register (CONTRIBUTING.md), or a
// plug-in.
package kmsurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/kms/plugin"
)

// Opener opens the key service a parsed URL names. getenv looks up
// environment variables (never nil).
type Opener func(ctx context.Context, u *url.URL, getenv func(string) string) (kms.KeyService, error)

var (
	mu        sync.RWMutex
	providers = map[string]Opener{
		"local": openLocal,
	}
)

// Register makes a provider available under a URL scheme. It panics if the
// scheme is taken, as database/sql.Register does.
func Register(scheme string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := providers[scheme]; dup || open == nil {
		panic("kmsurl: Register called twice for " + scheme + ", or with nil")
	}
	providers[scheme] = open
}

// Open returns the KeyService a URL names. getenv looks up
// WARD_MASTER_KEY for local:// (os.Getenv when nil).
func Open(ctx context.Context, rawURL string, getenv func(string) string) (kms.KeyService, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("kmsurl: %w", err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	mu.RLock()
	open, ok := providers[u.Scheme]
	mu.RUnlock()
	if !ok {
		ks, err := plugin.Open(ctx, rawURL)
		if err == nil {
			return ks, nil
		}
		if !errors.Is(err, plugin.ErrNotFound) {
			return nil, err
		}
		hint := ""
		if u.Scheme == "awskms" {
			hint = `; import _ "github.com/wardlab/ward/kms/awskms" to register it`
		}
		return nil, fmt.Errorf("kmsurl: unsupported scheme %q (%s, or a plug-in %s on PATH)%s: %w", u.Scheme, strings.Join(schemes(), ", "), plugin.Executable(u.Scheme), hint, err)
	}
	return open(ctx, u, getenv)
}

// schemes lists the registered URL schemes, sorted.
func schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for s := range providers {
		out = append(out, s+"://")
	}
	slices.Sort(out)
	return out
}

func openLocal(_ context.Context, u *url.URL, getenv func(string) string) (kms.KeyService, error) {
	path := u.Host + u.Path
	if u.Opaque != "" {
		path = u.Opaque
	}
	return local.Load(path, getenv)
}
