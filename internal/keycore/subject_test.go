package keycore

import (
	"bytes"
	"context"
	"crypto/fips140"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms/local"
)

func TestSubjectKeySealOpen(t *testing.T) {
	kr, err := New(AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			sk, err := NewSubjectKey(alg, 7)
			if refusedInFIPS(t, alg, err) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ct := sk.AppendSeal(nil, []byte("hello"), []byte("ctx"))
			if len(ct) != len("hello")+Overhead(alg) {
				t.Fatalf("length %d", len(ct))
			}
			if v, ok := SubjectKeyVersion(ct); !ok || v != 7 {
				t.Fatalf("SubjectKeyVersion = %d, %v", v, ok)
			}
			pt, err := sk.AppendOpen(nil, ct, []byte("ctx"))
			if err != nil || string(pt) != "hello" {
				t.Fatalf("open: %q, %v", pt, err)
			}
			if _, err := sk.AppendOpen(nil, ct, []byte("other")); !errors.Is(err, ErrWrongContext) {
				t.Errorf("wrong context: %v", err)
			}
			bad := bytes.Clone(ct)
			bad[len(bad)-1] ^= 1
			if _, err := sk.AppendOpen(nil, bad, []byte("ctx")); !errors.Is(err, ErrAuthentication) {
				t.Errorf("tampered: %v", err)
			}
			// The class byte is authenticated and checked: a class-2
			// value never opens under a keyring key, nor the reverse.
			if _, err := kr.Open(ct, []byte("ctx")); !errors.Is(err, ErrUnknownKey) {
				t.Errorf("keyring opened a subject value: %v", err)
			}
			kct, _ := kr.Seal([]byte("x"), []byte("ctx"))
			if _, err := sk.AppendOpen(nil, kct, []byte("ctx")); !errors.Is(err, ErrSubjectKey) {
				t.Errorf("subject key opened a keyring value: %v", err)
			}
			if _, ok := SubjectKeyVersion(kct); ok {
				t.Error("a keyring value reported as a subject value")
			}
			other, _ := NewSubjectKey(alg, 8)
			if _, err := other.AppendOpen(nil, ct, []byte("ctx")); !errors.Is(err, ErrUnknownKey) {
				t.Errorf("another version: %v", err)
			}
			same, _ := NewSubjectKey(alg, 7) // same version, other material
			if _, err := same.AppendOpen(nil, ct, []byte("ctx")); !errors.Is(err, ErrAuthentication) && !errors.Is(err, ErrWrongContext) {
				t.Errorf("other material: %v", err)
			}
			for _, s := range []string{sk.String(), fmt.Sprintf("%v %+v %#v %x", sk, sk, sk, sk)} {
				if strings.Contains(s, hex.EncodeToString(sk.k.material)) || !strings.Contains(s, "REDACTED") {
					t.Errorf("printed a subject key as %q", s)
				}
			}
		})
	}
	if _, err := NewSubjectKey(AES256GCM, 0); err == nil {
		t.Error("version 0 accepted")
	}
	if _, err := NewSubjectKey(AlgorithmUnknown, 1); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

func TestSubjectKeyWrap(t *testing.T) {
	ctx := context.Background()
	kr, _ := New(AES256GCM)
	sk, _ := NewSubjectKey(AES128GCM, 42)
	wrapped, err := kr.WrapSubjectKey(sk, []byte("users\x00alice\x0042"))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := KeyIDOf(wrapped); id != kr.Primary().ID {
		t.Fatalf("wrapped under %v, want the primary %v", id, kr.Primary().ID)
	}
	got, err := kr.UnwrapSubjectKey(wrapped, []byte("users\x00alice\x0042"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 42 || got.Algorithm() != AES128GCM || !bytes.Equal(got.k.material, sk.k.material) {
		t.Fatalf("unwrapped %v", got)
	}
	// Bound to its context: moved to another subject, it does not unwrap.
	if _, err := kr.UnwrapSubjectKey(wrapped, []byte("users\x00mallory\x0042")); !errors.Is(err, ErrWrongContext) {
		t.Errorf("another subject: %v", err)
	}
	// Not a plain keyring value either: the wrap context has its own domain.
	if _, err := kr.Open(wrapped, []byte("users\x00alice\x0042")); err == nil {
		t.Error("a wrapped key opened as an ordinary value")
	}
	// After a rotation the old wrapping still opens; re-wrapping moves it
	// to the new primary.
	if _, err := kr.Rotate(ctx, AES256GCM); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.UnwrapSubjectKey(wrapped, []byte("users\x00alice\x0042")); err != nil {
		t.Fatal(err)
	}
	// A key-encryption key wraps like the keyring does.
	kek, err := SubjectKeyFromSecret(AES256GCM, 1, bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	w2 := WrapSubjectKeyWith(kek, sk, []byte("c"))
	if got, err := UnwrapSubjectKeyWith(kek, w2, []byte("c")); err != nil || !bytes.Equal(got.k.material, sk.k.material) {
		t.Fatalf("kek unwrap: %v", err)
	}
	kek2, _ := SubjectKeyFromSecret(AES256GCM, 1, bytes.Repeat([]byte{8}, 32))
	if _, err := UnwrapSubjectKeyWith(kek2, w2, []byte("c")); err == nil {
		t.Error("another kek unwrapped")
	}
	if _, err := SubjectKeyFromSecret(AES256GCM, 1, make([]byte, 16)); err == nil {
		t.Error("short secret accepted")
	}
	sk.Destroy()
	if !bytes.Equal(sk.k.material, make([]byte, 16)) {
		t.Error("Destroy left material")
	}
}

func TestSubjectPayloadRefused(t *testing.T) {
	for _, p := range [][]byte{nil, {1}, {2, 2, 0, 0, 0, 1}, {1, 2, 0, 0, 0, 1, 5}, append([]byte{1, 2, 0, 0, 0, 0}, make([]byte, 32)...), append([]byte{1, 9, 0, 0, 0, 1}, make([]byte, 32)...)} {
		if _, err := parseSubjectPayload(p); err == nil {
			t.Errorf("payload %x accepted", p)
		}
	}
}

func FuzzSubjectPayload(f *testing.F) {
	sk, _ := NewSubjectKey(AES256GCM, 3)
	f.Add(sk.payload())
	f.Add([]byte{1, 3, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		k, err := parseSubjectPayload(p)
		if err != nil {
			return
		}
		if !bytes.Equal(k.payload(), p) {
			t.Fatalf("payload %x re-encoded as %x", p, k.payload())
		}
	})
}

var updateSubject = flag.Bool("update-subject", false, "write testdata/subject-v1.json (only when the subject key format is added)")

type subjectGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Vectors   []struct {
		Algorithm   string `json:"alg"`
		WrapContext string `json:"wrap_context"`
		Wrapped     string `json:"wrapped_hex"`
		Context     string `json:"context"`
		Plaintext   string `json:"plaintext"`
		Ciphertext  string `json:"ciphertext_hex"`
	} `json:"vectors"`
}

// TestGoldenSubject opens subject keys wrapped by an earlier build and the
// class-2 values sealed under them (FORMAT.md, "Subject keys").
func TestGoldenSubject(t *testing.T) {
	ctx := context.Background()
	const path = "../../keyring/testdata/subject-v1.json"
	if *updateSubject {
		mk := local.Generate()
		kr, _ := New(AES256GCM)
		g := subjectGolden{Comment: "ward subject keys (payload v1, class-2 ciphertext v3); written once with -update-subject", MasterKey: mk.Encode()}
		for i, alg := range Algorithms() {
			sk, _ := NewSubjectKey(alg, uint32(1000+i))
			wc := fmt.Sprintf("users\x00subject-%d\x00%d", i, 1000+i)
			w, _ := kr.WrapSubjectKey(sk, []byte(wc))
			c := fmt.Sprintf("ward/field/v3\x00messages\x00body\x00%d", i)
			ct := sk.AppendSeal(nil, []byte("secret of subject "+fmt.Sprint(i)), []byte(c))
			g.Vectors = append(g.Vectors, struct {
				Algorithm   string `json:"alg"`
				WrapContext string `json:"wrap_context"`
				Wrapped     string `json:"wrapped_hex"`
				Context     string `json:"context"`
				Plaintext   string `json:"plaintext"`
				Ciphertext  string `json:"ciphertext_hex"`
			}{alg.String(), wc, hex.EncodeToString(w), c, "secret of subject " + fmt.Sprint(i), hex.EncodeToString(ct)})
		}
		g.Keyring, _ = kr.Marshal(ctx, mk)
		out, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g subjectGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	mk, err := local.Parse(g.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := Unmarshal(ctx, g.Keyring, mk)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Vectors) != len(Algorithms()) {
		t.Fatalf("%d vectors", len(g.Vectors))
	}
	for _, v := range g.Vectors {
		w, _ := hex.DecodeString(v.Wrapped)
		sk, err := kr.UnwrapSubjectKey(w, []byte(v.WrapContext))
		if alg, _ := ParseAlgorithm(v.Algorithm); err == nil && fips140.Enabled() && alg == XChaCha20Poly1305 {
			_, err = sk.AppendOpen(nil, nil, nil) // unwrapped, but refused on use
		}
		if alg, _ := ParseAlgorithm(v.Algorithm); refusedInFIPS(t, alg, err) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: unwrap: %v", v.Algorithm, err)
		}
		if sk.Algorithm().String() != v.Algorithm {
			t.Errorf("algorithm %v, want %s", sk.Algorithm(), v.Algorithm)
		}
		ct, _ := hex.DecodeString(v.Ciphertext)
		pt, err := sk.AppendOpen(nil, ct, []byte(v.Context))
		if err != nil || string(pt) != v.Plaintext {
			t.Errorf("%s: open: %q %v", v.Algorithm, pt, err)
		}
		if ct[0] != version3 || ct[1] != byte(classSubject) {
			t.Errorf("%s: header %x", v.Algorithm, ct[:2])
		}
	}
}
