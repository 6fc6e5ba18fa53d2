package main

import (
	"bytes"
	"context"
	"crypto/fips140"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/plugin"
)

// pluginEnv makes the test binary serve as ward-kms-pkcs11 (installHSM
// puts a script of that name on PATH that runs it so).
const pluginEnv = "WARD_KMS_PKCS11_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) != "" {
		os.Exit(run(nil, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// softHSM is a SoftHSM2 token initialised for one test, and the URI of
// the key wardkey in it.
type softHSM struct {
	dir, uri, module string
}

// newSoftHSM initialises a token labelled "ward" (user PIN 1234) in a
// folder of the test's, and puts the plug-in on PATH. Without SoftHSM2
// the test skips, unless WARD_CI is set (.ci/run installs it).
func newSoftHSM(t *testing.T) *softHSM {
	t.Helper()
	util, err := exec.LookPath("softhsm2-util")
	module := os.Getenv("WARD_SOFTHSM_MODULE")
	if module == "" {
		module = "/usr/lib/softhsm/libsofthsm2.so"
	}
	if _, serr := os.Stat(module); err != nil || serr != nil {
		if os.Getenv("WARD_CI") != "" {
			t.Fatalf("SoftHSM2 is required here: softhsm2-util %v, module %v", err, serr)
		}
		t.Skip("needs SoftHSM2 (Debian's softhsm2)")
	}
	h := &softHSM{dir: t.TempDir(), module: module}
	conf := filepath.Join(h.dir, "softhsm2.conf")
	write(t, conf, "directories.tokendir = "+filepath.Join(h.dir, "tokens")+"\nobjectstore.backend = file\nlog.level = ERROR\n", 0o600)
	if err := os.Mkdir(filepath.Join(h.dir, "tokens"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", conf)
	if out, err := exec.Command(util, "--init-token", "--free", "--label", "ward", "--pin", "1234", "--so-pin", "5678").CombinedOutput(); err != nil {
		t.Fatalf("softhsm2-util --init-token: %v\n%s", err, out)
	}
	h.uri = h.keyURI("ward", "1234\n")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(h.dir, "bin")
	os.Mkdir(bin, 0o755)
	write(t, filepath.Join(bin, plugin.Executable("pkcs11")), "#!/bin/sh\n"+pluginEnv+"=1 exec '"+self+"'\n", 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return h
}

// keyURI is the URI of wardkey in the token labelled label, with a PIN
// file holding pin.
func (h *softHSM) keyURI(label, pin string) string {
	f, err := os.CreateTemp(h.dir, "pin-")
	if err != nil {
		panic(err)
	}
	f.WriteString(pin)
	f.Close()
	return fmt.Sprintf("pkcs11:token=%s;object=wardkey?module-path=%s&pin-source=file:%s", label, h.module, f.Name())
}

func write(t *testing.T, path, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

// TestSoftHSM: on a SoftHSM2 token, create-key makes the key; a keyring
// created under it (through kmsurl and the plug-in on PATH, as every
// --kms does) rotates and opens every value after loading again; a wrong
// PIN, a missing token and a deleted key each fail with their kind and a
// clear message. Under GODEBUG=fips140=only (TestSoftHSMUnderFIPS) the
// same.
func TestSoftHSM(t *testing.T) {
	if os.Getenv("WARD_PKCS11_WANT_FIPS") != "" && !fips140.Enabled() {
		t.Fatal("this run was to be in the FIPS 140-3 mode")
	}
	h := newSoftHSM(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"create-key", h.uri}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "created pkcs11:token=ward;object=wardkey") {
		t.Fatalf("create-key: %d %q %q", code, out.String(), errOut.String())
	}
	if code := run([]string{"create-key", h.uri}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "already holds a key") {
		t.Fatalf("create-key again: %d %q", code, errOut.String())
	}
	ctx := context.Background()
	ks, err := kmsurl.Open(ctx, h.uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Key() != (kms.KeyRef{Provider: "pkcs11", ID: "token=ward;object=wardkey"}) {
		t.Fatalf("key %v", ks.Key())
	}
	path := filepath.Join(h.dir, "keyring.json")
	sealed := rotateAndSeal(t, ctx, path, ks)
	kr, err := keyring.Load(ctx, path, ks)
	if err != nil {
		t.Fatal(err)
	}
	for i, ct := range sealed {
		if pt, err := kr.Open(ct, []byte("row")); err != nil || string(pt) != fmt.Sprint("value ", i) {
			t.Fatalf("value %d after the reload: %q %v", i, pt, err)
		}
	}
	checkRefusals(t, ctx, h, ks)
	deleteKey(t, h.uri)
	_, err = keyring.Load(ctx, path, ks)
	if !errors.Is(err, kms.ErrUnknownKey) || !strings.Contains(err.Error(), `no key labelled "wardkey" in the token labelled "ward"`) {
		t.Fatalf("the keyring with its key deleted from the token: %v, want ErrUnknownKey naming the key", err)
	}
	if _, err := kmsurl.Open(ctx, h.uri, nil); !errors.Is(err, kms.ErrUnknownKey) {
		t.Fatalf("describe of the deleted key: %v", err)
	}
}

// rotateAndSeal creates a keyring at path under ks, seals three values,
// rotates (a new primary, the file saved under ks again) and seals three
// more; it returns the six.
func rotateAndSeal(t *testing.T, ctx context.Context, path string, ks kms.KeyService) [][]byte {
	t.Helper()
	kr, err := keyring.Create(ctx, path, ks, keyring.DefaultAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	var sealed [][]byte
	for i := range 6 {
		if i == 3 {
			if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.DefaultAlgorithm); err != nil {
				t.Fatalf("rotation: %v", err)
			}
		}
		ct, err := kr.Seal([]byte(fmt.Sprint("value ", i)), []byte("row"))
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, ct)
	}
	if len(kr.Keys()) != 2 {
		t.Fatalf("%d keys after the rotation", len(kr.Keys()))
	}
	return sealed
}

// checkRefusals: a blob under another context or damaged, a wrong PIN, a
// missing token and a PIN in the URL are refused with their kinds.
func checkRefusals(t *testing.T, ctx context.Context, h *softHSM, ks kms.KeyService) {
	t.Helper()
	blob, err := ks.Encrypt(ctx, []byte("a data key"), map[string]string{"tenant": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Decrypt(ctx, blob, map[string]string{"tenant": "b"}); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Errorf("another encryption context: %v, want ErrInvalidCiphertext (SoftHSM's CKR_GENERAL_ERROR, the token probed)", err)
	}
	blob[len(blob)-1] ^= 1
	if _, err := ks.Decrypt(ctx, blob, map[string]string{"tenant": "a"}); !errors.Is(err, kms.ErrInvalidCiphertext) {
		t.Errorf("a damaged blob: %v, want ErrInvalidCiphertext", err)
	}
	for _, c := range []struct {
		uri  string
		kind error
		text string
	}{
		{h.keyURI("ward", "0000\n"), kms.ErrAccessDenied, "refused the PIN"},
		{h.keyURI("nosuch", "1234\n"), kms.ErrMisconfigured, `the token labelled "nosuch": no such token`},
		{strings.Replace(h.uri, "pin-source=file:", "pin-value=1234&x=", 1), kms.ErrMisconfigured, "pin-source=file:PATH"},
		{strings.Replace(h.uri, "object=wardkey", "objekt=wardkey", 1), kms.ErrMisconfigured, `"objekt"`},
	} {
		_, err := kmsurl.Open(ctx, c.uri, nil)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) || strings.Contains(err.Error(), "1234") {
			t.Errorf("%s: %v, want %v saying %q, no PIN", c.uri, err, c.kind, c.text)
		}
	}
}

// deleteKey deletes the URI's key from the token.
func deleteKey(t *testing.T, uri string) {
	t.Helper()
	k, err := parseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := login(k)
	if err != nil {
		t.Fatal(err)
	}
	defer tok.ctx.Close()
	key, err := tok.key()
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Delete(); err != nil {
		t.Fatal(err)
	}
}

// TestSoftHSMUnderFIPS runs TestSoftHSM again in a process in the FIPS
// 140-3 mode (GODEBUG=fips140=only), the plug-in's processes included.
func TestSoftHSMUnderFIPS(t *testing.T) {
	if testing.Short() || os.Getenv("WARD_PKCS11_WANT_FIPS") != "" {
		t.Skip("runs the test binary again")
	}
	newSoftHSM(t) // skips as TestSoftHSM does
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^TestSoftHSM$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=only", "WARD_PKCS11_WANT_FIPS=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("TestSoftHSM under fips140=only: %v\n%s", err, out)
	}
}
