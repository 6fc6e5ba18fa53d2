// Package kmsurl opens a kms.KeyService from a URL:
//
//	local://PATH                       master key in a file (local:// alone: $WARD_MASTER_KEY)
//	awskms://alias/NAME?region=R       AWS KMS key by alias (or awskms://KEY-ID)
//	awskms:///arn:aws:kms:…            AWS KMS key by ARN
//	…&endpoint=http://127.0.0.1:4599   an AWS-KMS-compatible endpoint (local-kms)
//	…&timeout=2s&attempts=3            per-call deadline and retry attempts
//
// Adding a provider (GCP, Azure, Vault) is one package implementing
// kms.KeyService and one line in the providers table below, or a call to
// Register (CONTRIBUTING.md).
package kmsurl

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/local"
)

// Opener opens the key service a parsed URL names. getenv looks up
// environment variables (never nil).
type Opener func(ctx context.Context, u *url.URL, getenv func(string) string) (kms.KeyService, error)

var (
	mu        sync.RWMutex
	providers = map[string]Opener{
		"local":  openLocal,
		"awskms": openAWS,
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
		return nil, fmt.Errorf("kmsurl: unsupported scheme %q (%s)", u.Scheme, strings.Join(schemes(), ", "))
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

func openAWS(ctx context.Context, u *url.URL, _ func(string) string) (kms.KeyService, error) {
	keyID := strings.TrimPrefix(u.Host+u.Path, "/")
	if keyID == "" {
		return nil, fmt.Errorf("kmsurl: %q names no key (awskms://alias/NAME or awskms:///ARN)", u.Redacted())
	}
	q := u.Query()
	cfg := awskms.Config{KeyID: keyID, Region: q.Get("region"), Endpoint: q.Get("endpoint")}
	var err error
	if t := q.Get("timeout"); t != "" {
		if cfg.Timeout, err = time.ParseDuration(t); err != nil {
			return nil, fmt.Errorf("kmsurl: timeout: %w", err)
		}
	}
	if a := q.Get("attempts"); a != "" {
		if cfg.MaxAttempts, err = strconv.Atoi(a); err != nil {
			return nil, fmt.Errorf("kmsurl: attempts: %w", err)
		}
	}
	return awskms.New(ctx, cfg)
}
