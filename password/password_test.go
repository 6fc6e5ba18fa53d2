package password

import (
	"context"
	"crypto/fips140"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
)

type vector struct {
	Source, Tool, Password, Hash string
}

func loadVectors(t testing.TB) []vector {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func newHasher(t testing.TB, p Policy) *Hasher {
	t.Helper()
	return newHasherWith(t, p, nil)
}

// fast is a cheap Argon2id policy for tests that hash a lot.
var fast = Policy{Preferred: Params{Scheme: Argon2id, Memory: 64, Time: 1, Parallelism: 1}, AllowWeak: true}

// TestVectors verifies hashes written by the reference argon2 CLI,
// libsodium, htpasswd, python-bcrypt, passlib, Django's and Spring's
// formats (testdata/README.md).
func TestVectors(t *testing.T) {
	h := newHasher(t, Policy{})
	ctx := context.Background()
	vs := loadVectors(t)
	if len(vs) < 40 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		res, err := h.Verify(ctx, []byte(v.Password), v.Hash)
		if fips140.Enabled() && errors.Is(err, ErrNotApproved) && strings.Contains(err.Error(), "PBKDF2 hash with a") {
			continue // a salt under 128 bits (Django, Spring 5.5): the module refuses it
		}
		if err != nil {
			t.Errorf("%s (%s): %v", v.Source, v.Hash[:min(30, len(v.Hash))], err)
			continue
		}
		if !res.NeedsRehash && res.Params.weakerThan(OWASP()) {
			t.Errorf("%s: weaker than OWASP but no rehash", v.Source)
		}
		if _, err := h.Verify(ctx, []byte(v.Password+"!"), v.Hash); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: wrong password: %v", v.Source, err)
		}
	}
}

// TestBareSpringScrypt: SCryptPasswordEncoder's hashes stored without
// DelegatingPasswordEncoder's {scrypt} prefix (an application that used the
// encoder directly) verify as with it; a PHC scheme name is never taken
// for one.
func TestBareSpringScrypt(t *testing.T) {
	h := newHasher(t, Policy{})
	ctx := context.Background()
	n := 0
	for _, v := range loadVectors(t) {
		bare, ok := strings.CutPrefix(v.Hash, "{scrypt}")
		if !ok {
			continue
		}
		n++
		if res, err := h.Verify(ctx, []byte(v.Password), bare); err != nil || res.Format != "spring-scrypt" {
			t.Errorf("%s: %v %+v", bare, err, res)
		}
		if _, err := h.Verify(ctx, []byte(v.Password+"!"), bare); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s, another password: %v", bare, err)
		}
	}
	if n == 0 {
		t.Fatal("no {scrypt} vectors")
	}
	for _, s := range []string{"$scrypt$ln=14,r=8,p=1$c2FsdA$c2FsdA", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$c2FsdA", "$abc$c2FsdA==$c2FsdA=="} {
		if bareSpringScrypt(s) {
			t.Errorf("%s taken for Spring's scrypt", s)
		}
	}
}

func TestHashRoundTrip(t *testing.T) {
	ctx := context.Background()
	h := newHasher(t, Policy{})
	enc, err := h.Hash(ctx, []byte("パスワード"))
	if err != nil {
		t.Fatal(err)
	}
	want, prefix := OWASP(), "$argon2id$v=19$m=19456,t=2,p=1$"
	if fips140.Enabled() {
		want, prefix = PBKDF2SHA256OWASP(), "$pbkdf2-sha256$i=600000,l=32$" // the FIPS 140-3 mode's default
	}
	if !strings.HasPrefix(enc, prefix) {
		t.Fatalf("default hash %s", enc)
	}
	p, format, err := Inspect(enc)
	if err != nil || p != want || format != "phc" {
		t.Fatalf("%+v %s %v", p, format, err)
	}
	res, err := h.Verify(ctx, []byte("パスワード"), enc)
	if err != nil || res.NeedsRehash {
		t.Fatalf("%+v %v", res, err)
	}
	enc2, _ := h.Hash(ctx, []byte("パスワード"))
	if enc == enc2 {
		t.Fatal("salt not random")
	}
}

func TestUpgradeOnLogin(t *testing.T) {
	ctx := context.Background()
	old := newHasher(t, Policy{Preferred: SpringV58(), AllowWeak: true})
	stored, _ := old.Hash(ctx, []byte("pw1"))
	h := newHasher(t, Policy{})
	up, res, err := h.VerifyAndUpgrade(ctx, []byte("pw1"), stored)
	if err != nil || !res.NeedsRehash || up == "" {
		t.Fatalf("%q %+v %v", up, res, err)
	}
	if p, _, _ := Inspect(up); p != OWASP() {
		t.Fatalf("upgraded to %v", p)
	}
	if up2, res, err := h.VerifyAndUpgrade(ctx, []byte("pw1"), up); err != nil || up2 != "" || res.NeedsRehash {
		t.Fatalf("second login: %q %+v %v", up2, res, err)
	}
	// Legacy schemes are upgraded too.
	for _, v := range loadVectors(t)[:12] {
		up, res, err := h.VerifyAndUpgrade(ctx, []byte(v.Password), v.Hash)
		if err != nil {
			t.Fatalf("%s: %v", v.Source, err)
		}
		if weak := res.Params.weakerThan(OWASP()); weak != strings.HasPrefix(up, "$argon2id$v=19$m=19456") || weak != (up != "") {
			t.Fatalf("%s (%v): upgraded to %q", v.Source, res.Params, up)
		}
	}
	if _, _, err := h.VerifyAndUpgrade(ctx, []byte("wrong"), stored); !errors.Is(err, ErrMismatch) {
		t.Fatal(err)
	}
}

// TestLimitsRefuseBeforeWork feeds hashes whose parameters would allocate
// gigabytes or run for hours: each is refused with a LimitError and the
// limiter never admits it.
func TestLimitsRefuseBeforeWork(t *testing.T) {
	h := newHasher(t, Policy{})
	ctx := context.Background()
	for _, enc := range []string{
		"$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0",
		"$argon2id$v=19$m=19456,t=4000000000,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0",
		"$argon2id$v=19$m=19456,t=2,p=200$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0",
		"$2b$31$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgswR2",
		"$scrypt$ln=30,r=8,p=1$dM65F0KolbJ2rrW29p7T2g$pkuYRjIb8HgiufEWhjDPaPLvovEXc69cSsGxzFTLIJ4",
		"$scrypt$ln=18,r=64,p=1$dM65F0KolbJ2rrW29p7T2g$pkuYRjIb8HgiufEWhjDPaPLvovEXc69cSsGxzFTLIJ4",
		"$pbkdf2-sha256$i=999999999,l=32$Yk9wL+kFBhcnnpaA4b9P7A$czBXILXfsM1/ju/QmmJWkiiy2AUfNxx5PU+iV5mpgaQ",
		"$argon2id$v=19$m=19456,t=2,p=1$" + strings.Repeat("A", 200) + "$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0",
	} {
		start := time.Now()
		_, err := h.Verify(ctx, []byte("x"), enc)
		var le *LimitError
		if !errors.As(err, &le) || !errors.Is(err, ErrLimit) {
			t.Errorf("%s: %v", enc[:30], err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", enc[:30], d)
		}
	}
	if s := h.Limiter().Stats(); s.Admitted != 0 {
		t.Fatalf("limiter admitted %d", s.Admitted)
	}
}

func TestBadInput(t *testing.T) {
	h := newHasher(t, Policy{})
	ctx := context.Background()
	good := "$argon2id$v=19$m=16384,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0"
	for _, tc := range []struct {
		hash string
		want error
	}{
		{"", ErrMalformed},
		{"plaintext", ErrUnsupportedScheme},
		{"{noop}password", ErrUnsupportedScheme},
		{"{MD5}5f4dcc3b5aa765d61d8327deb882cf99", ErrUnsupportedScheme},
		{"$argon2id$v=19$m=16384,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA", ErrMalformed},
		{"$argon2id$v=16$m=16384,t=2,p=1$c2FsdA$aGFzaA", ErrUnsupportedScheme},
		{"$argon2id$m=16384,t=2,p=1$c2FsdA$aGFzaA", ErrUnsupportedScheme},
		{"$argon2id$v=19$m=16384,t=2$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=16384,t=2,p=1,t=3$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=+16384,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=16384,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA==$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=16384,t=0,p=1$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=1,t=1,p=1$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrMalformed},
		{"$argon2id$v=19$m=16384,t=2,p=1,data=AAAA$c2FsdHNhbHRzYWx0MTIzNA$aGFzaGhhc2g", ErrUnsupportedScheme},
		{"$argon2id$v=19$m=16384,t=2,p=1$c2Fs$aGFzaGhhc2g", ErrMalformed},
		{"$md5$abc$def", ErrUnsupportedScheme},
		{"$2x$10$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgswR2", ErrUnsupportedScheme},
		{"$2b$10$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgsw", ErrMalformed},
		{"$2b$1x$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgswR2", ErrMalformed},
		{"$2b$10$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgsw!2", ErrMalformed},
		{"pbkdf2_sha256$abc$salt$aGFzaA==", ErrMalformed},
		{"{pbkdf2}zz", ErrMalformed},
		{"{scrypt}$zz$AA==$AA==", ErrMalformed},
		{good + strings.Repeat("A", 2000), ErrMalformed},
	} {
		_, err := h.Verify(ctx, []byte("pw"), tc.hash)
		if !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.hash[:min(len(tc.hash), 50)], err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "c2FsdHNhbHRzYWx0MTIzNA") {
			t.Errorf("error quotes the salt: %v", err)
		}
	}
	if _, err := h.Verify(ctx, nil, good); !errors.Is(err, ErrEmptyPassword) {
		t.Fatal(err)
	}
	if _, err := h.Hash(ctx, nil); !errors.Is(err, ErrEmptyPassword) {
		t.Fatal(err)
	}
	if _, err := h.Verify(ctx, make([]byte, 2000), good); !errors.Is(err, ErrPasswordTooLong) {
		t.Fatal(err)
	}
	allow := newHasher(t, Policy{AllowEmpty: true, Preferred: fast.Preferred, AllowWeak: true})
	enc, err := allow.Hash(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allow.Verify(ctx, nil, enc); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHasher(Policy{Preferred: Params{Scheme: Argon2id, Memory: 1024, Time: 1, Parallelism: 1}}, nil); !errors.Is(err, ErrWeakParams) {
		t.Fatal(err)
	}
	if _, err := NewHasher(Policy{Preferred: Params{Scheme: Bcrypt, Cost: 8}}, nil); !errors.Is(err, ErrWeakParams) {
		t.Fatal(err)
	}
	if _, err := NewHasher(Policy{Preferred: Params{Scheme: PBKDF2SHA1, Iterations: 1 << 20}}, nil); !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatal(err)
	}
	only := newHasher(t, Policy{Accept: []Scheme{Argon2id}})
	if _, err := only.Verify(ctx, []byte("x"), "$2b$10$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAsuP6Gf25rpTJlxPgswR2"); !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatal(err)
	}
}

func TestBcryptTruncationNeverSilent(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("a", 72)
	bh := newHasher(t, Policy{Preferred: Params{Scheme: Bcrypt, Cost: 4}, AllowWeak: true})
	if _, err := bh.Hash(ctx, []byte(long+"b")); !errors.Is(err, ErrPasswordTooLong) {
		t.Fatal(err)
	}
	enc, err := bh.Hash(ctx, []byte(long))
	if err != nil {
		t.Fatal(err)
	}
	h := newHasher(t, Policy{})
	if _, err := h.Verify(ctx, []byte(long+"zzz"), enc); !errors.Is(err, ErrPasswordTooLong) {
		t.Fatalf("long password: %v", err)
	}
	legacy := newHasher(t, Policy{BcryptTruncate: true})
	if _, err := legacy.Verify(ctx, []byte(long+"zzz"), enc); err != nil {
		t.Fatalf("explicit truncation: %v", err)
	}
}

func TestPepper(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	p := fast
	p.Pepper = kr
	h := newHasher(t, p)
	enc, err := h.Hash(ctx, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(enc, ",keyid=") {
		t.Fatalf("no keyid: %s", enc)
	}
	if res, err := h.Verify(ctx, []byte("pw"), enc); err != nil || res.NeedsRehash {
		t.Fatal(res, err)
	}
	// Without the keyring the hash cannot be checked (a stolen database
	// alone does not allow offline guessing).
	if _, err := newHasher(t, fast).Verify(ctx, []byte("pw"), enc); !errors.Is(err, ErrPepper) {
		t.Fatal(err)
	}
	other, _ := keyring.New(keyring.AES256GCM)
	p2 := fast
	p2.Pepper = other
	if _, err := newHasher(t, p2).Verify(ctx, []byte("pw"), enc); !errors.Is(err, ErrPepper) {
		t.Fatal(err)
	}
	// Rotation: old hashes still verify and ask for a rehash.
	keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM)
	res, err := h.Verify(ctx, []byte("pw"), enc)
	if err != nil || !res.NeedsRehash {
		t.Fatal(res, err)
	}
	if _, err := h.Verify(ctx, []byte("wrong"), enc); !errors.Is(err, ErrMismatch) {
		t.Fatal(err)
	}
	if _, err := NewHasher(Policy{Preferred: Bcrypt12(), Pepper: kr}, nil); err == nil {
		t.Fatal("bcrypt with pepper accepted")
	}
}

func TestPresets(t *testing.T) {
	for _, n := range []string{"owasp", "spring-v5.8", "strong", "bcrypt12", "scrypt17", "pbkdf2-sha256"} {
		p, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewHasher(Policy{Preferred: p}, nil)
		if n == "spring-v5.8" && !fips140.Enabled() {
			// 16384 KiB x 2 passes is below OWASP's equivalence line.
			if !errors.Is(err, ErrWeakParams) {
				t.Fatalf("spring preset without AllowWeak: %v", err)
			}
			_, err = NewHasher(Policy{Preferred: p, AllowWeak: true}, nil)
		}
		if errors.Is(err, ErrNotApproved) && fips140.Enabled() && p.Scheme != PBKDF2SHA256 {
			continue // the FIPS 140-3 mode writes PBKDF2-SHA-256 only
		}
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if _, err := Preset("md5"); err == nil {
		t.Fatal("unknown preset")
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add(v.Hash)
	}
	f.Add("$argon2id$v=19$m=1,t=1,p=1$AAAAAAAAAAA$AAAAAA")
	f.Add("$ward-argon2id-kek$v=19$m=64,t=1,p=1$d2FyZCBnb2xkZW4gc2FsdA$+MVw/H6BxC3/BLn5q0FEZxfp4ueu7fb3FnDaXnOlR5w")
	pref := fast.Preferred
	if fips140.Enabled() {
		pref = Params{Scheme: PBKDF2SHA256, Iterations: 1000} // verification is what is fuzzed
	}
	h, err := NewHasher(Policy{Preferred: pref, AllowWeak: true, Limits: Limits{MaxArgon2Memory: 1024, MaxArgon2Time: 2, MaxBcryptCost: 5,
		MaxScryptLogN: 10, MaxPBKDF2Iterations: 2000}}, NewLimiter(LimiterConfig{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _, err := Inspect(s)
		_, verr := h.Verify(context.Background(), []byte("correct horse battery staple"), s)
		if err != nil && verr == nil {
			t.Fatalf("Inspect rejects what Verify accepts: %v", err)
		}
	})
}
