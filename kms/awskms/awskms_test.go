package awskms

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"

	"github.com/wardlab/ward/kms"
)

// TestClassify: unavailability, misconfiguration and denial are told
// apart, so that "cached keys keep working" is said only of the first.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"no credentials", &v4.SigningError{Err: errors.New("failed to retrieve credentials")}, kms.ErrMisconfigured},
		{"bad credentials", &smithy.GenericAPIError{Code: "UnrecognizedClientException", Fault: smithy.FaultClient}, kms.ErrMisconfigured},
		{"expired token", &smithy.GenericAPIError{Code: "ExpiredTokenException", Fault: smithy.FaultClient}, kms.ErrMisconfigured},
		{"unknown client fault", &smithy.GenericAPIError{Code: "SomethingNew", Fault: smithy.FaultClient}, kms.ErrMisconfigured},
		{"denied", &smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient}, kms.ErrAccessDenied},
		{"disabled key", &smithy.GenericAPIError{Code: "DisabledException", Fault: smithy.FaultClient}, kms.ErrAccessDenied},
		{"throttled", &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}, kms.ErrThrottled},
		{"server fault", &smithy.GenericAPIError{Code: "KMSInternalException", Fault: smithy.FaultServer}, kms.ErrUnavailable},
		{"unknown server fault", &smithy.GenericAPIError{Code: "X", Fault: smithy.FaultServer}, kms.ErrUnavailable},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, kms.ErrUnavailable},
		{"deadline", context.DeadlineExceeded, kms.ErrUnavailable},
		{"bad ciphertext", &smithy.GenericAPIError{Code: "InvalidCiphertextException", Fault: smithy.FaultClient}, kms.ErrInvalidCiphertext},
		{"unknown key", &smithy.GenericAPIError{Code: "NotFoundException", Fault: smithy.FaultClient}, kms.ErrUnknownKey},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if kms.Transient(&kms.ServiceError{Kind: kms.ErrMisconfigured}) || !kms.Transient(&kms.ServiceError{Kind: kms.ErrThrottled}) {
		t.Fatal("Transient")
	}
}

func TestMissingProfileIsMisconfiguration(t *testing.T) {
	t.Setenv("AWS_PROFILE", "ward-no-such-profile")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	_, err := New(context.Background(), Config{KeyID: "alias/x", Region: "us-east-1"})
	if !errors.Is(err, kms.ErrMisconfigured) {
		t.Fatalf("%v", err)
	}
}

// TestNoCredentialsIsMisconfiguration: with no credentials anywhere (no
// variables, no files, no instance role), the failure is a
// misconfiguration an operator must fix, not a transient outage. The
// instance-metadata service is disabled, so nothing leaves the machine.
func TestNoCredentialsIsMisconfiguration(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	s, err := New(context.Background(), Config{KeyID: "alias/x", Region: "us-east-1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Encrypt(context.Background(), []byte("x"), nil)
	if !errors.Is(err, kms.ErrMisconfigured) || kms.Transient(err) || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("no credentials: %v", err)
	}
}
