package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/plugin"
	"github.com/wardlab/ward/kms/plugin/plugintest"
)

// TestMain runs the test binary as the plug-in ward-kms-test when
// plugintest.Install's script starts it.
func TestMain(m *testing.M) {
	plugintest.MainIfPlugin()
	os.Exit(m.Run())
}

// TestRoundTrip: a plug-in found on PATH describes its key, wraps and
// unwraps bound to the encryption context, and seals a keyring file that
// loads again through kmsurl, as the CLI's --kms does.
func TestRoundTrip(t *testing.T) {
	plugintest.Install(t)
	ctx := context.Background()
	s, err := plugin.Open(ctx, "test:k1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Key() != (kms.KeyRef{Provider: "test", ID: "k1"}) {
		t.Fatalf("key %v", s.Key())
	}
	ec := map[string]string{"purpose": "test"}
	ct, err := s.Encrypt(ctx, []byte("a data key"), ec)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := s.Decrypt(ctx, ct, ec); err != nil || string(pt) != "a data key" {
		t.Fatalf("unwrap: %q %v", pt, err)
	}
	if _, err := s.Decrypt(ctx, ct, map[string]string{"purpose": "other"}); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Fatalf("unwrap under another context: %v, want ErrInvalidCiphertext", err)
	}
	other, err := kmsurl.Open(ctx, "test:k2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decrypt(ctx, ct, ec); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Fatalf("unwrap under another key: %v, want ErrInvalidCiphertext", err)
	}
	path := filepath.Join(t.TempDir(), "keyring.json")
	kr, err := keyring.Create(ctx, path, s, keyring.DefaultAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := kr.Seal([]byte("hello"), []byte("ad"))
	if _, err := keyring.Load(ctx, path, other); err == nil {
		t.Fatal("the keyring loaded under another plug-in key")
	}
	again, err := keyring.Load(ctx, path, s)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := again.Open(sealed, []byte("ad")); err != nil || string(pt) != "hello" {
		t.Fatalf("open after load: %q %v", pt, err)
	}
}

// TestFailures: each way a plug-in fails reaches the caller as the kms
// kind it is, with a bounded, printable message, and never hangs.
func TestFailures(t *testing.T) {
	plugintest.Install(t)
	ctx := context.Background()
	for _, c := range []struct {
		uri  string
		want []error
		text string
	}{
		{"nosuch:k", []error{plugin.ErrNotFound, kms.ErrMisconfigured}, "ward-kms-nosuch"},
		{"Te_st:k", []error{kms.ErrMisconfigured}, "scheme"},
		{"test:k?fault=silent", []error{kms.ErrUnavailable}, "without answering"},
		{"test:k?fault=garbage", []error{kms.ErrMisconfigured, plugin.ErrFrame}, "malformed frame"},
		{"test:k?fault=flood", []error{kms.ErrUnavailable}, "without answering"},
		{"test:k?fail=unknown-key&message=no+such+object", []error{kms.ErrUnknownKey}, "no such object"},
		{"test:k?fail=access-denied&message=PIN%0Aincorrect%1b[2J", []error{kms.ErrAccessDenied}, `PIN\nincorrect\x1b[2J`},
		{"test:k?provider=other", []error{kms.ErrMisconfigured}, "described no key of its scheme"},
	} {
		_, err := plugin.Open(ctx, c.uri)
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want %v", c.uri, err, w)
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.text) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%s: %q, want it to say %q, with no control character", c.uri, err, c.text)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := plugin.Open(tctx, "test:k?fault=hang"); !errors.Is(err, kms.ErrUnavailable) {
		t.Errorf("a plug-in that hangs, once the context ends: %v, want ErrUnavailable", err)
	}
	s, err := plugin.Open(ctx, "test:k?fail=unavailable&op=wrap&message=token+removed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encrypt(ctx, []byte("k"), nil); !kms.Transient(err) || !strings.Contains(err.Error(), "token removed") {
		t.Errorf("a wrap the device refused: %v, want a transient error", err)
	}
	if _, err := s.Encrypt(ctx, make([]byte, 4097), nil); !errors.Is(err, kms.ErrMisconfigured) {
		t.Errorf("a wrap of 4097 bytes: %v", err)
	}
}

// TestEnvironmentWithheld: a plug-in gets ward's environment without the
// master key and the database URLs (which may hold passwords).
func TestEnvironmentWithheld(t *testing.T) {
	plugintest.Install(t)
	t.Setenv("WARD_MASTER_KEY", "c2VjcmV0")
	t.Setenv("WARD_DB", "postgres://app:hunter2@db/app")
	t.Setenv("WARD_SOME_SETTING", "kept")
	for name, want := range map[string]string{"WARD_MASTER_KEY": "env--", "WARD_DB": "env--", "WARD_SOME_SETTING": "env-kept-"} {
		s, err := plugin.Open(context.Background(), "test:k?echo-env="+name)
		if err != nil || s.Key().ID != want {
			t.Errorf("%s in the plug-in: %v %v, want %q", name, s, err, want)
		}
	}
}
