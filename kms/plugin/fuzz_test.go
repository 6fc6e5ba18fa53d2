package plugin_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

// frameSeeds are the vectors' frames, the fuzzers' starting points.
func frameSeeds(f *testing.F) {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		f.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		f.Fatal(err)
	}
	for _, r := range v.Requests {
		fr, _ := hex.DecodeString(r.Frame)
		f.Add(fr)
	}
	for _, r := range v.Responses {
		fr, _ := hex.DecodeString(r.Frame)
		f.Add(fr)
	}
}

// FuzzReadResponse: any bytes a plug-in writes give a response that
// holds exactly one of data, key and error, or ErrFrame; never a panic,
// and never a read past the length's bound.
func FuzzReadResponse(f *testing.F) {
	frameSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := plugin.ReadResponse(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, plugin.ErrFrame) {
				t.Fatalf("%v is not ErrFrame", err)
			}
			return
		}
		if resp.Version != plugin.Version || len(b) < 4 || binary.BigEndian.Uint32(b) > plugin.MaxFrame {
			t.Fatalf("accepted %+v from a frame of length %x", resp, b[:min(4, len(b))])
		}
	})
}

// FuzzServe: any bytes ward (or anyone) writes to a plug-in get one
// well-formed response frame from Serve, an error for what is not a
// request.
func FuzzServe(f *testing.F) {
	frameSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		err := plugin.Serve(context.Background(), bytes.NewReader(b), &out, echo{})
		resp, rerr := plugin.ReadResponse(&out)
		if rerr != nil {
			t.Fatalf("Serve wrote a malformed frame: %v", rerr)
		}
		if err != nil && (resp.Error == nil || resp.Error.Kind != "misconfigured") {
			t.Fatalf("a refused request answered %+v", resp)
		}
	})
}

// echo is a Handler that wraps by copying (for the fuzzer only).
type echo struct{}

func (echo) Describe(context.Context, string) (kms.KeyRef, error) {
	return kms.KeyRef{Provider: "echo", ID: "k"}, nil
}
func (echo) Wrap(_ context.Context, _ string, pt, _ []byte) ([]byte, error) {
	return bytes.Clone(pt), nil
}
func (echo) Unwrap(_ context.Context, _ string, ct, _ []byte) ([]byte, error) {
	if len(ct) == 0 {
		return nil, kms.ErrInvalidCiphertext
	}
	return bytes.Clone(ct), nil
}

// TestServeRefuses: Serve answers a request it cannot read with a
// misconfigured error, and a handler's error with its kind.
func TestServeRefuses(t *testing.T) {
	var out bytes.Buffer
	if err := plugin.Serve(context.Background(), strings.NewReader("\x00\x00\x00\x02{}"), &out, echo{}); !errors.Is(err, plugin.ErrFrame) {
		t.Fatalf("a request of version 0: %v", err)
	}
	if resp, err := plugin.ReadResponse(&out); err != nil || resp.Error == nil || resp.Error.Kind != "misconfigured" {
		t.Fatalf("answer: %+v %v", resp, err)
	}
	var in bytes.Buffer
	plugin.WriteFrame(&in, plugin.Request{Version: plugin.Version, Op: plugin.OpUnwrap, URI: "echo:k"})
	if err := plugin.Serve(context.Background(), &in, &out, echo{}); err != nil {
		t.Fatal(err)
	}
	if resp, err := plugin.ReadResponse(&out); err != nil || resp.Error == nil || resp.Error.Kind != "invalid-ciphertext" {
		t.Fatalf("a handler's error: %+v %v", resp, err)
	}
}
