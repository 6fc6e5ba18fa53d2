// Package kmsurl opens a kms.KeyService from a URL, so that adding a
// provider (GCP, Azure, Vault) is one case here and one package:
//
//	local://PATH                       master key in a file (local:// alone: $WARD_MASTER_KEY)
//	awskms://alias/NAME?region=R       AWS KMS key by alias (or awskms://KEY-ID)
//	awskms:///arn:aws:kms:…            AWS KMS key by ARN
//	…&endpoint=http://127.0.0.1:4599   an AWS-KMS-compatible endpoint (local-kms)
//	…&timeout=2s&attempts=3            per-call deadline and retry attempts
package kmsurl

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/local"
)

// Open returns the KeyService a URL names. getenv looks up
// WARD_MASTER_KEY for local:// (os.Getenv when nil).
func Open(ctx context.Context, rawURL string, getenv func(string) string) (kms.KeyService, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("kmsurl: %w", err)
	}
	switch u.Scheme {
	case "local":
		path := u.Host + u.Path
		if u.Opaque != "" {
			path = u.Opaque
		}
		return local.Load(path, getenv)
	case "awskms":
		keyID := strings.TrimPrefix(u.Host+u.Path, "/")
		if keyID == "" {
			return nil, fmt.Errorf("kmsurl: %q names no key (awskms://alias/NAME or awskms:///ARN)", rawURL)
		}
		q := u.Query()
		cfg := awskms.Config{KeyID: keyID, Region: q.Get("region"), Endpoint: q.Get("endpoint")}
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
	return nil, fmt.Errorf("kmsurl: unsupported scheme %q (local://, awskms://)", u.Scheme)
}
