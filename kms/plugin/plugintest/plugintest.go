// Package plugintest is a key-service plug-in for tests: ward-kms-test,
// served by the test binary itself. Keys are named by the URL's opaque
// part (test:NAME) and are AES-256-GCM under SHA-256(NAME): a test key, not
// a secret. The URL's query asks for faults: fault=silent (exit without
// answering), garbage (a malformed frame), flood (output without end),
// hang; fail=unknown-key|access-denied|unavailable with message=TEXT,
// for every operation or only op=describe|wrap|unwrap; provider=NAME
// describes a key of another scheme; echo-env=NAME describes a key whose
// ID holds the plug-in's variable NAME (env-VALUE-), to test what a
// plug-in is given.
package plugintest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

// Env is the environment variable that makes Main serve the plug-in.
const Env = "WARD_KMS_TEST_PLUGIN"

// MainIfPlugin serves one request as ward-kms-test and exits when Env
// is set; otherwise it returns. A package's TestMain calls it first.
func MainIfPlugin() {
	if os.Getenv(Env) != "" {
		os.Exit(Main())
	}
}

// Main serves one request on standard input and output as ward-kms-test
// and returns the exit code (as testscript's commands do).
func Main() int {
	req, err := plugin.ReadRequest(os.Stdin)
	if err != nil {
		return 2
	}
	u, _ := url.Parse(req.URI)
	q := u.Query()
	switch q.Get("fault") {
	case "silent":
		return 3
	case "garbage":
		os.Stdout.Write([]byte{0, 0, 0, 5, '{', '"', 'x'})
		return 0
	case "flood":
		big := make([]byte, 1<<20)
		for {
			if _, err := os.Stdout.Write(big); err != nil {
				return 4
			}
		}
	case "hang":
		time.Sleep(time.Hour)
	}
	r, w := io.Pipe() // Serve reads its own request: hand it the one read here
	go func() { plugin.WriteFrame(w, req); w.Close() }()
	if err := plugin.Serve(context.Background(), r, os.Stdout, Keys{q}); err != nil {
		return 5
	}
	return 0
}

// Install puts ward-kms-test on PATH for the rest of the test: a script
// that runs the test binary with Env set (its TestMain calls
// MainIfPlugin).
func Install(t testing.TB) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n" + Env + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, plugin.Executable("test")), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Keys is the test plug-in's plugin.Handler; Query holds the faults.
type Keys struct{ Query url.Values }

func (h Keys) fault(op string) error {
	q := h.Query
	if q.Get("fail") != "" && (q.Get("op") == "" || q.Get("op") == op) {
		kind := map[string]error{"unknown-key": kms.ErrUnknownKey, "access-denied": kms.ErrAccessDenied}[q.Get("fail")]
		if kind == nil {
			kind = kms.ErrUnavailable
		}
		return fmt.Errorf("%w: %s", kind, q.Get("message"))
	}
	return nil
}

// Describe names the key test:NAME as test/NAME (or the provider the
// query asks for).
func (h Keys) Describe(_ context.Context, uri string) (kms.KeyRef, error) {
	u, _ := url.Parse(uri)
	if p := h.Query.Get("provider"); p != "" {
		return kms.KeyRef{Provider: p, ID: u.Opaque}, nil
	}
	if name := h.Query.Get("echo-env"); name != "" {
		return kms.KeyRef{Provider: u.Scheme, ID: "env-" + os.Getenv(name) + "-"}, nil
	}
	return kms.KeyRef{Provider: u.Scheme, ID: u.Opaque}, h.fault("describe")
}

func aead(uri string) cipher.AEAD {
	u, _ := url.Parse(uri)
	k := sha256.Sum256([]byte(u.Opaque))
	b, _ := aes.NewCipher(k[:])
	a, _ := cipher.NewGCM(b)
	return a
}

// Wrap seals pt under the URI's key, ad as associated data.
func (h Keys) Wrap(_ context.Context, uri string, pt, ad []byte) ([]byte, error) {
	if err := h.fault("wrap"); err != nil {
		return nil, err
	}
	a := aead(uri)
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, pt, ad), nil
}

// Unwrap opens what Wrap returned for the same URI and ad.
func (h Keys) Unwrap(_ context.Context, uri string, ct, ad []byte) ([]byte, error) {
	if err := h.fault("unwrap"); err != nil {
		return nil, err
	}
	a := aead(uri)
	if len(ct) < a.NonceSize() {
		return nil, kms.ErrInvalidCiphertext
	}
	pt, err := a.Open(nil, ct[:a.NonceSize()], ct[a.NonceSize():], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: the tag does not verify", kms.ErrInvalidCiphertext)
	}
	return pt, nil
}
