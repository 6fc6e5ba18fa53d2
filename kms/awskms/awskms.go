// Package awskms is a kms.KeyService backed by AWS KMS through the official
// SDK (github.com/aws/aws-sdk-go-v2), or any server that speaks its API
// (such as local-kms). Credentials come from the SDK's standard chain; with
// an endpoint override and no credentials in the environment, static
// placeholder credentials are used, which local KMS servers accept.
package awskms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/wardlab/ward/kms"
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
		return nil, fmt.Errorf("awskms: loading AWS configuration: %w", err)
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

// Provider returns "awskms".
func (s *Service) Provider() string { return "awskms" }

// KeyID returns the configured key ID or alias.
func (s *Service) KeyID() string { return s.keyID }

func (s *Service) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Encrypt calls KMS Encrypt.
func (s *Service) Encrypt(ctx context.Context, plaintext []byte, ec map[string]string) ([]byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(s.keyID), Plaintext: plaintext, EncryptionContext: ec})
	if err != nil {
		return nil, mapError(err)
	}
	return out.CiphertextBlob, nil
}

// Decrypt calls KMS Decrypt, naming the expected key.
func (s *Service) Decrypt(ctx context.Context, ciphertext []byte, ec map[string]string) ([]byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.Decrypt(ctx, &awskms.DecryptInput{KeyId: aws.String(s.keyID), CiphertextBlob: ciphertext, EncryptionContext: ec})
	if err != nil {
		return nil, mapError(err)
	}
	return out.Plaintext, nil
}

// GenerateDataKey calls KMS GenerateDataKey.
func (s *Service) GenerateDataKey(ctx context.Context, size int, ec map[string]string) ([]byte, []byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.GenerateDataKey(ctx, &awskms.GenerateDataKeyInput{KeyId: aws.String(s.keyID),
		NumberOfBytes: aws.Int32(int32(size)), EncryptionContext: ec})
	if err != nil {
		return nil, nil, mapError(err)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Describe returns the key's ARN and state.
func (s *Service) Describe(ctx context.Context) (arn, state string, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := s.client.DescribeKey(ctx, &awskms.DescribeKeyInput{KeyId: aws.String(s.keyID)})
	if err != nil {
		return "", "", mapError(err)
	}
	return aws.ToString(out.KeyMetadata.Arn), string(out.KeyMetadata.KeyState), nil
}

// mapError wraps SDK errors in kms's sentinels, keeping the original.
func mapError(err error) error {
	var nf *types.NotFoundException
	var ic *types.InvalidCiphertextException
	var ik *types.IncorrectKeyException
	var ds *types.DisabledException
	var api smithy.APIError
	var ne net.Error
	switch {
	case errors.As(err, &nf):
		return errors.Join(kms.ErrUnknownKey, err)
	case errors.As(err, &ic), errors.As(err, &ik):
		return errors.Join(kms.ErrInvalidCiphertext, err)
	case errors.As(err, &ds):
		return errors.Join(kms.ErrAccessDenied, err)
	case errors.As(err, &api):
		switch api.ErrorCode() {
		case "AccessDeniedException":
			return errors.Join(kms.ErrAccessDenied, err)
		case "ThrottlingException", "LimitExceededException":
			return errors.Join(kms.ErrThrottled, err)
		case "InvalidCiphertextException", "IncorrectKeyException":
			return errors.Join(kms.ErrInvalidCiphertext, err)
		case "NotFoundException":
			return errors.Join(kms.ErrUnknownKey, err)
		}
		if api.ErrorFault() == smithy.FaultServer {
			return errors.Join(kms.ErrUnavailable, err)
		}
		return fmt.Errorf("awskms: %w", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ne):
		return errors.Join(kms.ErrUnavailable, err)
	}
	return errors.Join(kms.ErrUnavailable, err)
}
