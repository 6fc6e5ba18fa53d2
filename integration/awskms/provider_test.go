package awskms_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/wardlab/ward/internal/localkms"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/local"
)

// startKMS runs local-kms in process on 127.0.0.1 and creates a key with
// an alias through the real AWS SDK.
func startKMS(t *testing.T) (*localkms.Server, *awskms.Service) {
	t.Helper()
	srv, err := localkms.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	admin, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward", Endpoint: srv.Endpoint(), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := admin.Client().CreateKey(ctx, &sdk.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Client().CreateAlias(ctx, &sdk.CreateAliasInput{AliasName: aws.String("alias/ward"), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
		t.Fatal(err)
	}
	svc, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward", Endpoint: srv.Endpoint(), Region: "us-east-1",
		Timeout: 500 * time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	return srv, svc
}

func providers(t *testing.T) map[string]kms.KeyService {
	_, aws := startKMS(t)
	return map[string]kms.KeyService{"local": local.Generate(), "awskms": aws}
}

var ec = map[string]string{"tenant": "42", "purpose": "chat"}

func TestKeyServices(t *testing.T) {
	ctx := context.Background()
	for name, ks := range providers(t) {
		t.Run(name, func(t *testing.T) {
			ct, err := ks.Encrypt(ctx, []byte("data key"), ec)
			if err != nil {
				t.Fatal(err)
			}
			pt, err := ks.Decrypt(ctx, ct, ec)
			if err != nil || string(pt) != "data key" {
				t.Fatalf("%q %v", pt, err)
			}
			if _, err := ks.Decrypt(ctx, ct, map[string]string{"tenant": "43", "purpose": "chat"}); !errors.Is(err, kms.ErrInvalidCiphertext) {
				t.Fatalf("other encryption context: %v", err)
			}
			bad := bytes.Clone(ct)
			bad[len(bad)-1] ^= 1
			if _, err := ks.Decrypt(ctx, bad, ec); !errors.Is(err, kms.ErrInvalidCiphertext) {
				t.Fatalf("tampered: %v", err)
			}
		})
	}
}

func TestEnvelope(t *testing.T) {
	ctx := context.Background()
	for name, ks := range providers(t) {
		t.Run(name, func(t *testing.T) {
			env := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
			var cts [][]byte
			for i := range 50 {
				ct, err := env.Seal(ctx, []byte("こんにちは"), []byte{byte(i)}, ec)
				if err != nil {
					t.Fatal(err)
				}
				cts = append(cts, ct)
			}
			for i, ct := range cts {
				pt, err := env.Open(ctx, ct, []byte{byte(i)}, ec)
				if err != nil || string(pt) != "こんにちは" {
					t.Fatalf("%d: %v", i, err)
				}
			}
			st := env.Stats()
			if st.KMSCalls != 1 || st.SealMisses != 1 || st.SealHits != 49 || st.OpenHits != 50 {
				t.Fatalf("one data key should serve all: %+v", st)
			}
			// A fresh Envelope (another process) unwraps once, then caches.
			other := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
			for i, ct := range cts {
				if _, err := other.Open(ctx, ct, []byte{byte(i)}, ec); err != nil {
					t.Fatal(err)
				}
			}
			if st := other.Stats(); st.KMSCalls != 1 || st.OpenMisses != 1 {
				t.Fatalf("%+v", st)
			}
			// Context and encryption context are authenticated.
			if _, err := env.Open(ctx, cts[0], []byte{9}, ec); !errors.Is(err, kms.ErrAuthentication) {
				t.Fatalf("other context: %v", err)
			}
			if _, err := other.Open(ctx, cts[0], []byte{0}, map[string]string{"tenant": "43"}); err == nil {
				t.Fatal("other encryption context opened")
			}
			// NoCache: one KMS call per seal and per open.
			nc := kms.NewEnvelope(ks, kms.EnvelopeOptions{NoCache: true})
			ct, _ := nc.Seal(ctx, []byte("x"), nil, ec)
			nc.Open(ctx, ct, nil, ec)
			nc.Seal(ctx, []byte("x"), nil, ec)
			if st := nc.Stats(); st.KMSCalls != 3 {
				t.Fatalf("no cache: %+v", st)
			}
		})
	}
}

// TestOutage stops the KMS mid-run: sealing continues with the cached data
// key until its limit, opening continues for cached keys, everything else
// fails with ErrUnavailable within the deadline; after a restart all works.
func TestOutage(t *testing.T) {
	ctx := context.Background()
	srv, svc := startKMS(t)
	env := kms.NewEnvelope(svc, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxMessages: 20}})
	first, err := env.Seal(ctx, []byte("before"), nil, ec)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"tenant": "7"}
	otherCT, _ := env.Seal(ctx, []byte("other"), nil, other)
	fresh := kms.NewEnvelope(svc, kms.EnvelopeOptions{})

	srv.Stop()
	for i := 1; i < 20; i++ { // the cached key has 19 messages left
		if _, err := env.Seal(ctx, []byte("during"), nil, ec); err != nil {
			t.Fatalf("seal %d with a valid cached key: %v", i, err)
		}
	}
	start := time.Now()
	if _, err := env.Seal(ctx, []byte("over the limit"), nil, ec); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("seal past the limit: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("failure took %v", d)
	}
	if _, err := env.Open(ctx, first, nil, ec); err != nil {
		t.Fatalf("open with a cached key: %v", err)
	}
	if _, err := fresh.Open(ctx, otherCT, nil, other); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("open without a cached key: %v", err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Seal(ctx, []byte("after"), nil, ec); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if pt, err := fresh.Open(ctx, otherCT, nil, other); err != nil || string(pt) != "other" {
		t.Fatalf("after restart: %v", err)
	}
}

// TestBadServers: a KMS that answers garbage, and one that hangs, give
// typed errors within the caller's deadline.
func TestBadServers(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Write([]byte("{{{{ not json"))
	}))
	defer garbage.Close()
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer hanging.Close()
	defer close(hang)
	for name, url := range map[string]string{"garbage": garbage.URL, "hanging": hanging.URL} {
		svc, err := awskms.New(context.Background(), awskms.Config{KeyID: "alias/x", Endpoint: url, Region: "us-east-1", Timeout: 300 * time.Millisecond, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = svc.Encrypt(context.Background(), []byte("k"), nil)
		if err == nil || time.Since(start) > 2*time.Second {
			t.Fatalf("%s: %v after %v", name, err, time.Since(start))
		}
		var se *kms.ServiceError
		if !errors.As(err, &se) || se.Op != "Encrypt" || se.Key.ID != "alias/x" {
			t.Fatalf("%s: not a ServiceError: %v", name, err)
		}
		if name == "hanging" && !errors.Is(err, kms.ErrUnavailable) {
			t.Fatalf("hanging: %v", err)
		}
	}
	// Unknown key on a real server.
	srv, _ := startKMS(t)
	svc, _ := awskms.New(context.Background(), awskms.Config{KeyID: "alias/nope", Endpoint: srv.Endpoint(), Region: "us-east-1"})
	if _, err := svc.Encrypt(context.Background(), []byte("k"), nil); !errors.Is(err, kms.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestKMSURL(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	ks, err := kmsurl.Open(ctx, "local://", func(string) string { return mk.Encode() })
	if err != nil || ks.Key() != mk.Key() {
		t.Fatal(err)
	}
	srv, _ := startKMS(t)
	ks, err = kmsurl.Open(ctx, "awskms://alias/ward?region=us-east-1&endpoint="+srv.Endpoint()+"&timeout=1s&attempts=2", nil)
	if err != nil || ks.Key().ID != "alias/ward" {
		t.Fatal(err)
	}
	if _, err := ks.Encrypt(ctx, []byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"gcpkms://x", "awskms://", "awskms://k?timeout=x"} {
		if _, err := kmsurl.Open(ctx, bad, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The keyring can be stored wrapped by a KMS key: the same abstraction as
// a master key.
func TestKeyringWrappedByKMS(t *testing.T) {
	ctx := context.Background()
	_, svc := startKMS(t)
	path := filepath.Join(t.TempDir(), "kr.json")
	kr, err := keyring.Create(ctx, path, svc, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	back, err := keyring.Load(ctx, path, svc)
	if err != nil || back.Primary().ID != kr.Primary().ID {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"provider": "awskms"`)) {
		t.Fatalf("%s", data)
	}
}

// TestNegativeCache: a forged envelope costs one KMS call, not one per
// attempt; unavailability is not remembered.
func TestNegativeCache(t *testing.T) {
	ctx := context.Background()
	srv, svc := startKMS(t)
	env := kms.NewEnvelope(svc, kms.EnvelopeOptions{})
	ct, _ := env.Seal(ctx, []byte("x"), nil, ec)
	forged := bytes.Clone(ct)
	wrapped, _ := kms.ParseEnvelope(forged)
	wrapped[len(wrapped)-1] ^= 1 // the wrapped key's last byte
	victim := kms.NewEnvelope(svc, kms.EnvelopeOptions{})
	for range 20 {
		if _, err := victim.Open(ctx, forged, nil, ec); !errors.Is(err, kms.ErrInvalidCiphertext) {
			t.Fatalf("forged: %v", err)
		}
	}
	if st := victim.Stats(); st.KMSCalls != 1 || st.OpenRefused != 19 {
		t.Fatalf("forged envelope replayed: %+v", st)
	}
	srv.Stop()
	fresh := kms.NewEnvelope(svc, kms.EnvelopeOptions{})
	for range 2 {
		if _, err := fresh.Open(ctx, ct, nil, ec); !errors.Is(err, kms.ErrUnavailable) {
			t.Fatalf("outage: %v", err)
		}
	}
	if st := fresh.Stats(); st.KMSCalls != 2 {
		t.Fatalf("unavailability was cached: %+v", st)
	}
	srv.Restart()
	if _, err := fresh.Open(ctx, ct, nil, ec); err != nil {
		t.Fatal(err)
	}
}

// TestEnvelopeTextGolden opens the text form written by the previous
// release's CLI (testdata/e1-cli): the text form is part of the format.
