package keycore

import (
	"bytes"
	"errors"
	"testing"
)

// TestSealOpenAD checks the variants that take the associated data with
// room for the header: what they seal opens with Open and follows
// FORMAT.md's check, the context is left as it was, with or without spare
// capacity for the check's work area, a buffer without room is an error,
// and failed opens say why as Open does. Subject keys' variants too.
func TestSealOpenAD(t *testing.T) {
	skipV3Sealing(t)
	context := []byte("ward/field/v3\x00\x08messages\x04body\x00\x0642")
	for _, alg := range Algorithms() {
		kr, err := New(alg)
		if err != nil {
			t.Fatal(err)
		}
		for _, spare := range []int{0, 7, 64} {
			ad := make([]byte, headerSize, headerSize+len(context)+spare)
			ad = append(ad, context...)
			ct, err := kr.AppendSealAD([]byte("prefix"), []byte("hello"), ad)
			if err != nil || string(ct[:6]) != "prefix" {
				t.Fatalf("%v: %v", alg, err)
			}
			ct = ct[6:]
			if !bytes.Equal(ad[headerSize:], context) {
				t.Fatalf("%v: AppendSealAD changed the context", alg)
			}
			if pt, err := kr.Open(ct, context); err != nil || string(pt) != "hello" {
				t.Fatalf("%v: %q %v", alg, pt, err)
			}
			h, err := parseHeader(ct)
			if err != nil {
				t.Fatal(err)
			}
			checkV3Spec(t, kr, h, ct, context)
			sealed, _ := kr.Seal([]byte("hello"), context)
			if pt, err := kr.AppendOpenAD(nil, sealed, ad); err != nil || string(pt) != "hello" {
				t.Fatalf("%v: AppendOpenAD: %q %v", alg, pt, err)
			}
			wrong := append(make([]byte, headerSize), "other"...)
			if _, err := kr.AppendOpenAD(nil, sealed, wrong); !errors.Is(err, ErrWrongContext) {
				t.Fatalf("%v: wrong context: %v", alg, err)
			}
			tampered := bytes.Clone(sealed)
			tampered[len(tampered)-1] ^= 1
			if _, err := kr.AppendOpenAD(nil, tampered, ad); !errors.Is(err, ErrAuthentication) {
				t.Fatalf("%v: tampered: %v", alg, err)
			}
		}
		if _, err := kr.AppendSealAD(nil, nil, make([]byte, headerSize-1)); err == nil {
			t.Fatalf("%v: AppendSealAD without room for a header", alg)
		}
		if _, err := kr.AppendOpenAD(nil, nil, nil); err == nil {
			t.Fatalf("%v: AppendOpenAD without room for a header", alg)
		}

		sk, err := NewSubjectKey(alg, 7)
		if err != nil {
			t.Fatal(err)
		}
		ad := append(make([]byte, headerSize), context...)
		ct, err := sk.AppendSealAD(nil, []byte("mine"), ad)
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := sk.AppendOpen(nil, ct, context); err != nil || string(pt) != "mine" {
			t.Fatalf("%v: subject: %q %v", alg, pt, err)
		}
		if pt, err := sk.AppendOpenAD(nil, ct, ad); err != nil || string(pt) != "mine" {
			t.Fatalf("%v: subject AppendOpenAD: %q %v", alg, pt, err)
		}
		if _, err := sk.AppendOpenAD(nil, ct, ad[:headerSize-1]); err == nil {
			t.Fatalf("%v: subject AppendOpenAD without room", alg)
		}
		if _, err := sk.AppendSealAD(nil, nil, nil); err == nil {
			t.Fatalf("%v: subject AppendSealAD without room", alg)
		}
	}
}
