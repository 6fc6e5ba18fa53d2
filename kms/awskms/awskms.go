// Package awskms is the key service of an AWS KMS key (a kms.KeyService)
// through the official SDK (github.com/aws/aws-sdk-go-v2), or any server that speaks its API
// (such as local-kms). Credentials come from the SDK's standard chain; with
// an endpoint override and no credentials in the environment, static
// placeholder credentials are used, which local KMS servers accept.
//
// Importing the package registers the awskms:// scheme with kmsurl.
package awskms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
)

// Config configures a Service.
type Config struct {
	// KeyID is a key ID, key ARN, alias name ("alias/ward") or alias ARN.
	KeyID string
	// Region is the AWS region (default: the SDK's, else us-east-1).
	Region string
	// Endpoint overrides the service endpoint, e.g. http://127.0.0.1:4599.
	Endpoint string
	// Timeout bounds each call, retries included, when the caller's
	// context has no earlier deadline (default 5 s).
	Timeout time.Duration
	// MaxAttempts is the SDK retryer's attempt count for throttling and
	// transient errors (default 3).
	MaxAttempts int
}

// Service is an AWS KMS key.
type Service struct {
	client  *awskms.Client
	keyID   string
	timeout time.Duration
}

var (
	_ kms.KeyService       = (*Service)(nil)
	_ kms.DataKeyGenerator = (*Service)(nil)
)

// New returns a Service for cfg.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.KeyID == "" {
		return nil, errors.New("awskms: a key ID or alias is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = time.Second
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ward-local", "ward-local", "")))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, &kms.ServiceError{Op: "LoadDefaultConfig", Key: kms.KeyRef{Provider: Provider, ID: cfg.KeyID}, Kind: kms.ErrMisconfigured, Err: err}
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	client := awskms.NewFromConfig(ac, func(o *awskms.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Service{client: client, keyID: cfg.KeyID, timeout: cfg.Timeout}, nil
}

// Client returns the SDK client, for administration (creating keys in tests).
func (s *Service) Client() *awskms.Client { return s.client }

// Provider is the provider name of an AWS KMS key in a [kms.KeyRef].
const Provider = "awskms"

// Key returns the provider "awskms" and the configured key ID or alias.
func (s *Service) Key() kms.KeyRef { return kms.KeyRef{Provider: Provider, ID: s.keyID} }

func (s *Service) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Encrypt calls KMS Encrypt.
func (s *Service) Encrypt(ctx context.Context, plaintext []byte, encryptionContext map[string]string) ([]byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(s.keyID), Plaintext: plaintext, EncryptionContext: encryptionContext})
	if err != nil {
		return nil, s.fail("Encrypt", err)
	}
	return out.CiphertextBlob, nil
}

// Decrypt calls KMS Decrypt, naming the expected key.
func (s *Service) Decrypt(ctx context.Context, ciphertext []byte, encryptionContext map[string]string) ([]byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.Decrypt(ctx, &awskms.DecryptInput{KeyId: aws.String(s.keyID), CiphertextBlob: ciphertext, EncryptionContext: encryptionContext})
	if err != nil {
		return nil, s.fail("Decrypt", err)
	}
	return out.Plaintext, nil
}

// GenerateDataKey calls KMS GenerateDataKey.
func (s *Service) GenerateDataKey(ctx context.Context, size int, encryptionContext map[string]string) ([]byte, []byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.GenerateDataKey(ctx, &awskms.GenerateDataKeyInput{KeyId: aws.String(s.keyID),
		NumberOfBytes: aws.Int32(int32(size)), EncryptionContext: encryptionContext})
	if err != nil {
		return nil, nil, s.fail("GenerateDataKey", err)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Describe returns the key's ARN and state.
func (s *Service) Describe(ctx context.Context) (arn, state string, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.DescribeKey(ctx, &awskms.DescribeKeyInput{KeyId: aws.String(s.keyID)})
	if err != nil {
		return "", "", s.fail("DescribeKey", err)
	}
	return aws.ToString(out.KeyMetadata.Arn), string(out.KeyMetadata.KeyState), nil
}

func (s *Service) fail(op string, err error) error {
	return &kms.ServiceError{Op: op, Key: s.Key(), Kind: Classify(err), Err: err}
}

// apiKinds maps AWS KMS error codes to kinds. Codes not listed are
// classified by their fault: server faults are unavailability, client
// faults misconfiguration.
var apiKinds = map[string]error{
	"NotFoundException":           kms.ErrUnknownKey,
	"InvalidCiphertextException":  kms.ErrInvalidCiphertext,
	"IncorrectKeyException":       kms.ErrInvalidCiphertext,
	"AccessDeniedException":       kms.ErrAccessDenied,
	"DisabledException":           kms.ErrAccessDenied,
	"KMSInvalidStateException":    kms.ErrAccessDenied,
	"ThrottlingException":         kms.ErrThrottled,
	"LimitExceededException":      kms.ErrThrottled,
	"KeyUnavailableException":     kms.ErrUnavailable,
	"DependencyTimeoutException":  kms.ErrUnavailable,
	"KMSInternalException":        kms.ErrUnavailable,
	"UnrecognizedClientException": kms.ErrMisconfigured,
	"InvalidSignatureException":   kms.ErrMisconfigured,
	"IncompleteSignature":         kms.ErrMisconfigured,
	"MissingAuthenticationToken":  kms.ErrMisconfigured,
	"InvalidClientTokenId":        kms.ErrMisconfigured,
	"ExpiredTokenException":       kms.ErrMisconfigured,
	"InvalidKeyUsageException":    kms.ErrMisconfigured,
	"InvalidArnException":         kms.ErrMisconfigured,
	"ValidationException":         kms.ErrMisconfigured,
}

// Classify tells what kind of failure an SDK error is: unavailability
// (network, timeouts, server faults; transient), throttling,
// misconfiguration (credentials, region, endpoint, key ID syntax: an
// operator must act), denial, an unknown key or an invalid ciphertext.
func Classify(err error) error {
	var signing *v4.SigningError
	var region *aws.MissingRegionError
	var endpoint *aws.EndpointNotFoundError
	var api smithy.APIError
	var ne net.Error
	switch {
	case errors.As(err, &signing), errors.As(err, &region), errors.As(err, &endpoint), noCredentials(err):
		return kms.ErrMisconfigured
	case errors.As(err, &api):
		if k, ok := apiKinds[api.ErrorCode()]; ok {
			return k
		}
		if api.ErrorFault() == smithy.FaultServer {
			return kms.ErrUnavailable
		}
		return kms.ErrMisconfigured
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ne):
		return kms.ErrUnavailable
	}
	return kms.ErrUnavailable
}

// noCredentials reports whether the SDK found no credentials at all: its
// credential chain ended without any (on a machine without an instance
// role, its last link, IMDS, is not even reachable, which would otherwise
// read as a transient network failure). The SDK gives this failure no
// type of its own, only these words (aws.CredentialsCache, the identity
// adapter).
func noCredentials(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to refresh cached credentials") || strings.Contains(msg, "get identity: get credentials:")
}

func init() { kmsurl.Register("awskms", open) }

// open opens the key service an awskms:// URL names:
//
//	awskms://alias/NAME?region=R       a key by alias (or awskms://KEY-ID)
//	awskms:///arn:aws:kms:…            a key by ARN
//	…&endpoint=http://127.0.0.1:4599   an AWS-KMS-compatible endpoint (local-kms)
//	…&timeout=2s&attempts=3            per-call deadline and retry attempts
func open(ctx context.Context, u *url.URL, _ func(string) string) (kms.KeyService, error) {
	keyID := strings.TrimPrefix(u.Host+u.Path, "/")
	if keyID == "" {
		return nil, fmt.Errorf("awskms: %q names no key (awskms://alias/NAME or awskms:///ARN)", u.Redacted())
	}
	q := u.Query()
	cfg := Config{KeyID: keyID, Region: q.Get("region"), Endpoint: q.Get("endpoint")}
	var err error
	if t := q.Get("timeout"); t != "" {
		if cfg.Timeout, err = time.ParseDuration(t); err != nil {
			return nil, fmt.Errorf("awskms: timeout: %w", err)
		}
	}
	if a := q.Get("attempts"); a != "" {
		if cfg.MaxAttempts, err = strconv.Atoi(a); err != nil {
			return nil, fmt.Errorf("awskms: attempts: %w", err)
		}
	}
	return New(ctx, cfg)
}
