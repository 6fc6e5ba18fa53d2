package kms_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
)

func TestCacheLimits(t *testing.T) {
	ctx := context.Background()
	ks := local.Generate()
	env := kms.NewEnvelope(ks, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxMessages: 10, MaxBytes: 1 << 20, MaxAge: time.Hour}})
	for range 25 {
		env.Seal(ctx, []byte("m"), nil, ec)
	}
	if st := env.Stats(); st.KMSCalls != 3 || st.Evictions != 2 {
		t.Fatalf("message limit: %+v", st)
	}
	env = kms.NewEnvelope(ks, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxBytes: 100}})
	for range 3 {
		env.Seal(ctx, make([]byte, 60), nil, ec)
	}
	if st := env.Stats(); st.KMSCalls != 3 {
		t.Fatalf("byte limit: %+v", st)
	}
	env = kms.NewEnvelope(ks, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxAge: 20 * time.Millisecond}})
	env.Seal(ctx, nil, nil, ec)
	time.Sleep(40 * time.Millisecond)
	env.Seal(ctx, nil, nil, ec)
	if st := env.Stats(); st.KMSCalls != 2 {
		t.Fatalf("age limit: %+v", st)
	}
	// Concurrent sealing respects the message limit.
	env = kms.NewEnvelope(ks, kms.EnvelopeOptions{Limits: kms.CacheLimits{MaxMessages: 100}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				env.Seal(ctx, []byte("m"), nil, ec)
			}
		}()
	}
	wg.Wait()
	if st := env.Stats(); st.SealHits+st.SealMisses != 800 || st.SealMisses < 8 {
		t.Fatalf("concurrent: %+v", st)
	}
}

func TestEnvelopeParse(t *testing.T) {
	ctx := context.Background()
	env := kms.NewEnvelope(local.Generate(), kms.EnvelopeOptions{})
	ct, _ := env.Seal(ctx, []byte("x"), nil, ec)
	huge := bytes.Clone(ct)
	binary.BigEndian.PutUint16(huge[1:3], 65535)
	for name, in := range map[string][]byte{"empty": nil, "version": {0x01, 0, 1}, "absurd length": huge,
		"zero length": {0x81, 0, 0}, "truncated": ct[:10]} {
		if _, err := env.Open(ctx, in, nil, ec); !errors.Is(err, kms.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEnvelopeTextGolden(t *testing.T) {
	mk, err := local.Load("testdata/e1-cli/mk", nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile("testdata/e1-cli/ct.txt")
	ct, err := kms.DecodeEnvelopeText(string(text))
	if err != nil {
		t.Fatal(err)
	}
	fieldCtx := []byte("ward/field/v1\x00\x08messages\x04body42")
	pt, err := kms.NewEnvelope(mk, kms.EnvelopeOptions{}).Open(context.Background(), ct, fieldCtx, nil)
	if err != nil || string(pt) != "hello from v1" {
		t.Fatalf("%q %v", pt, err)
	}
	if kms.EncodeEnvelopeText(ct) != strings.TrimSpace(string(text)) {
		t.Fatal("text form does not round-trip")
	}
	for _, bad := range []string{"", "w1:AAAA", "e1:!!!", "e1:AAAA"} {
		if _, err := kms.DecodeEnvelopeText(bad); !errors.Is(err, kms.ErrMalformed) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func FuzzEnvelopeOpen(f *testing.F) {
	env := kms.NewEnvelope(local.Generate(), kms.EnvelopeOptions{})
	ct, _ := env.Seal(context.Background(), []byte("seed"), nil, nil)
	f.Add(ct)
	f.Add([]byte{0x81, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		pt, err := env.Open(context.Background(), in, nil, nil)
		if err == nil && !bytes.Equal(in, ct) {
			t.Fatalf("forged envelope opened: %q", pt)
		}
	})
}

var ec = map[string]string{"tenant": "42", "purpose": "chat"}
