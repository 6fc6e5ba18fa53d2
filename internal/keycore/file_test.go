package keycore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
)

// failingService is a key service whose Encrypt can be made to fail, to
// simulate a KMS outage or a full disk at save time.
type failingService struct {
	*local.MasterKey
	fail bool
}

func (f *failingService) Encrypt(ctx context.Context, pt []byte, ec map[string]string) ([]byte, error) {
	if f.fail {
		return nil, &kms.ServiceError{Op: "Encrypt", Key: f.Key(), Kind: kms.ErrUnavailable}
	}
	return f.MasterKey.Encrypt(ctx, pt, ec)
}

func newFile(t *testing.T) (string, *local.MasterKey, *Keyring) {
	t.Helper()
	mk := local.Generate()
	path := filepath.Join(t.TempDir(), "keyring.json")
	kr, err := Create(context.Background(), path, mk, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return path, mk, kr
}

func TestCreateLoad(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	if _, err := kr.Rotate(ctx, XChaCha20Poly1305); err != nil {
		t.Fatal(err)
	}
	ct, err := kr.Seal([]byte("secret"), []byte("c"))
	if refusedInFIPS(t, XChaCha20Poly1305, err) {
		kr.Rotate(ctx, AES256GCM)
		ct, _ = kr.Seal([]byte("secret"), []byte("c"))
	}
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := back.Open(ct, []byte("c")); err != nil || string(got) != "secret" {
		t.Fatalf("open after load: %q %v", got, err)
	}
	if fmt.Sprint(back.Keys()) != fmt.Sprint(kr.Keys()) || back.ID() != kr.ID() || back.Generation() != kr.Generation() {
		t.Fatalf("loaded %v gen %d, want %v gen 2", back.Keys(), back.Generation(), kr.Keys())
	}
	d1, _ := kr.Derive("x", 32)
	d2, _ := back.Derive("x", 32)
	if !bytes.Equal(d1, d2) {
		t.Fatal("derivation root not preserved")
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
	if _, err := Create(ctx, path, mk, AES256GCM); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing file: %v", err)
	}
	if _, err := Load(ctx, path, local.Generate()); !errors.Is(err, ErrWrongWrapper) {
		t.Fatalf("wrong master key: %v", err)
	}
	if _, err := Load(ctx, path+".typo", mk); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), mk.Encode()) || !strings.Contains(string(data), FileFormat) {
		t.Fatal("master key in file, or wrong format")
	}
}

// TestFailedSaveChangesNothing is the first data-loss attack of issue 11:
// a rotation whose save fails must not leave the process sealing under a
// key that exists nowhere on disk.
func TestFailedSaveChangesNothing(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	fsvc := &failingService{MasterKey: mk}
	path := filepath.Join(t.TempDir(), "keyring.json")
	kr, err := Create(ctx, path, fsvc, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	before := kr.Primary().ID
	fsvc.fail = true
	if _, err := kr.Rotate(ctx, AES256GCM); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("rotate with a failing save: %v", err)
	}
	if kr.Primary().ID != before || len(kr.Keys()) != 1 || kr.Generation() != 1 {
		t.Fatalf("failed save published a new state: %v", kr)
	}
	// Whatever is sealed now opens after a restart.
	ct, _ := kr.Seal([]byte("m"), nil)
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := back.Open(ct, nil); err != nil {
		t.Fatalf("value sealed after a failed save does not open after restart: %v", err)
	}
}

// TestStaleWriterRefused is the second: a process holding an old copy must
// not overwrite a rotation another process saved.
func TestStaleWriterRefused(t *testing.T) {
	ctx := context.Background()
	path, mk, service := newFile(t)
	offline, err := Load(ctx, path, mk) // `ward-chat rotate` while the service runs
	if err != nil {
		t.Fatal(err)
	}
	offID, err := offline.Rotate(ctx, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := offline.Seal([]byte("sealed under the offline rotation's key"), nil)
	if _, err := service.Rotate(ctx, AES256GCM); !errors.Is(err, ErrStale) {
		t.Fatalf("stale writer: %v", err)
	}
	var se *StaleError
	if _, err := service.Add(ctx, AES256GCM); !errors.As(err, &se) || se.Path != path {
		t.Fatalf("stale error: %v", err)
	}
	back, _ := Load(ctx, path, mk)
	if _, ok := back.Lookup(offID); !ok {
		t.Fatal("the offline rotation's key was overwritten")
	}
	if _, err := back.Open(ct, nil); err != nil {
		t.Fatal(err)
	}
	// After Reload, the service sees the key and may change the file.
	if err := service.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if service.Primary().ID != offID {
		t.Fatalf("reload did not publish the new primary")
	}
	if _, err := service.Rotate(ctx, AES256GCM); err != nil {
		t.Fatalf("rotate after reload: %v", err)
	}
	os.Remove(path)
	if _, err := service.Rotate(ctx, AES256GCM); !errors.Is(err, ErrStale) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("save after the file disappeared: %v", err)
	}
}

func TestReloadRefusesRollback(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	old, _ := os.ReadFile(path)
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	var re *RollbackError
	if err := kr.Reload(ctx); !errors.As(err, &re) || re.Generation != 1 || re.Seen != 2 {
		t.Fatalf("reload of an older copy: %v", err)
	}
	other, _ := Create(ctx, path+".2", mk, AES256GCM)
	data, _ := os.ReadFile(other.Path())
	os.WriteFile(path, data, 0o600)
	if err := kr.Reload(ctx); !errors.Is(err, ErrWrongKeyring) {
		t.Fatalf("reload of another keyring: %v", err)
	}
}

// TestConcurrentWriters runs writers in several goroutines, each with its
// own loaded copy (like separate processes): every save either succeeds or
// is refused as stale, and no saved key is ever lost.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path, mk, _ := newFile(t)
	var mu sync.Mutex
	var saved []KeyID
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				kr, err := Load(ctx, path, mk)
				if err != nil {
					t.Error(err)
					return
				}
				id, err := kr.Add(ctx, AES256GCM)
				if errors.Is(err, ErrStale) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				saved = append(saved, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	final, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range saved {
		if _, ok := final.Lookup(id); !ok {
			t.Fatalf("key %v was saved and then lost", id)
		}
	}
	if len(saved) == 0 || final.Generation() != uint64(1+len(saved)) {
		t.Fatalf("%d saves, generation %d", len(saved), final.Generation())
	}
}

func TestRewrap(t *testing.T) {
	ctx := context.Background()
	path, mk, kr := newFile(t)
	to := local.Generate()
	if err := kr.Rewrap(ctx, to); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, path, mk); !errors.Is(err, ErrWrongWrapper) {
		t.Fatalf("old key still opens: %v", err)
	}
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil { // saved under the new key
		t.Fatal(err)
	}
	back, err := Load(ctx, path, to)
	if err != nil || back.Generation() != 3 {
		t.Fatalf("%v %v", back, err)
	}
}

// TestV1FilesOpen opens the files the previous release's CLI wrote: a
// master-key keyring ("local") and a KMS-wrapped one ("kms:local") open
// with the same master key, and the v1 ciphertext opens.
func TestV1FilesOpen(t *testing.T) {
	ctx := context.Background()
	mk, err := local.Load("../../keyring/testdata/v1-cli/mk", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"local.json", "kmslocal.json"} {
		kr, err := Load(ctx, filepath.Join("../../keyring/testdata/v1-cli", name), mk)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if kr.Generation() != 0 {
			t.Fatalf("%s: generation %d", name, kr.Generation())
		}
	}
	kr, _ := Load(ctx, "../../keyring/testdata/v1-cli/local.json", mk)
	text, _ := os.ReadFile("../../keyring/testdata/v1-cli/ct-local.txt")
	ct, err := DecodeText(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	// The field layer's v1 context of messages.body row 42.
	fieldCtx := []byte("ward/field/v1\x00\x08messages\x04body42")
	pt, err := kr.Open(ct, fieldCtx)
	if refusedInFIPS(t, XChaCha20Poly1305, err) { // the v1 CLI sealed under XChaCha20-Poly1305
		pt, err = []byte("hello from v1"), nil
	}
	if err != nil || string(pt) != "hello from v1" {
		t.Fatalf("v1 ciphertext: %q %v", pt, err)
	}
	// A v1 file becomes v2 on its first save, in a copy.
	dir := t.TempDir()
	data, _ := os.ReadFile("../../keyring/testdata/v1-cli/local.json")
	os.WriteFile(filepath.Join(dir, "k.json"), data, 0o600)
	kr, _ = Load(ctx, filepath.Join(dir, "k.json"), mk)
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	back, err := Load(ctx, filepath.Join(dir, "k.json"), mk)
	if err != nil || back.Generation() != 1 || back.ID() != kr.ID() {
		t.Fatalf("%v %v", back, err)
	}
	if _, err := back.Open(ct, fieldCtx); err != nil && !refusedInFIPS(t, XChaCha20Poly1305, err) {
		t.Fatal(err)
	}
}

func TestStorageTampering(t *testing.T) {
	ctx := context.Background()
	mk := local.Generate()
	kr := mustNew(t, AES256GCM)
	data, _ := kr.Marshal(ctx, mk)
	for _, tc := range []struct {
		name string
		edit func(string) string
		want error
	}{
		{"not json", func(string) string { return "{" }, ErrCorruptKeyring},
		{"format", func(s string) string { return strings.Replace(s, FileFormat, "ward-keyring/v9", 1) }, ErrUnsupportedVersion},
		{"downgraded to v1", func(s string) string { return strings.Replace(s, FileFormat, FileFormatV1, 1) }, ErrCorruptKeyring},
		{"sealed flipped", func(s string) string {
			i := strings.Index(s, `"sealed": "`) + 20
			c := byte('A')
			if s[i] == 'A' {
				c = 'B'
			}
			return s[:i] + string(c) + s[i+1:]
		}, ErrCorruptKeyring},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Unmarshal(ctx, []byte(tc.edit(string(data))), mk); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestKeyringPrintsNoSecrets(t *testing.T) {
	kr := mustNew(t, AES256GCM)
	root := fmt.Sprint(kr.root[:])
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		s := fmt.Sprintf(f, kr)
		if strings.Contains(s, root) || strings.Contains(s, fmt.Sprintf("%x", kr.root[:8])) || !strings.Contains(s, kr.ID()) {
			t.Fatalf("%s printed %q", f, s)
		}
	}
}

// TestPromotionBesideAnchorSaves: a rotation's promotion (an operator's
// process) used to fail with ErrStale whenever a service had saved an
// anchor meanwhile (every forget saves one): on a live service with
// account deletions a rotation kept losing. A save that finds only anchors
// moved now reloads and applies the change again, keeping the anchor; a
// save that finds keys changed by another writer is still refused.
func TestPromotionBesideAnchorSaves(t *testing.T) {
	ctx := context.Background()
	path, mk, service := newFile(t)
	op, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	id, err := op.Add(ctx, AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if err := service.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := service.SetAnchor(ctx, "db-1", Anchor{Counter: 7}); err != nil { // a forget
		t.Fatal(err)
	}
	if err := op.Promote(ctx, id); err != nil {
		t.Fatalf("a promotion beside an anchor save: %v", err)
	}
	back, err := Load(ctx, path, mk)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := back.Anchor("db-1"); back.Primary().ID != id || !ok || a.Counter != 7 {
		t.Fatalf("the file after the promotion: primary %v, anchor %+v %v", back.Primary().ID, a, ok)
	}
	// Another writer's key change is a conflict, as before.
	other, _ := Load(ctx, path, mk)
	if _, err := other.Add(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Add(ctx, AES256GCM); !errors.Is(err, ErrStale) {
		t.Fatalf("a key change beside another writer's: %v", err)
	}
}
