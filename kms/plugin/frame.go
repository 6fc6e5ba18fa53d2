// Package plugin runs key services that live outside ward's binaries, in
// the spirit of age's plug-ins: a provider beyond the built-in ones (a
// PKCS#11 token, another cloud's KMS) is an executable named
// ward-kms-<scheme>, found on PATH, that wraps and unwraps for the key
// URLs of its scheme. ward starts it once per call and speaks a small,
// versioned protocol over its standard input and output (FORMAT.md,
// "Key-service plug-ins"): one request frame in, one response frame out.
// Nothing of a plug-in is linked into ward, so a provider's SDK or cgo
// module never grows the ward binary or reaches the library.
//
// [Open] gives a [kms.KeyService] backed by a plug-in (package kmsurl calls
// it for every scheme no provider registered); [Serve] is the plug-in's
// side, for whoever writes one in Go.
package plugin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version this package speaks: every frame
// carries it, and a frame of another version is refused.
const Version = 1

// MaxFrame is the largest frame body either side reads (64 KiB): a wrap
// takes at most 4 KiB of plaintext, so a frame is far smaller; a longer
// length prefix is refused before anything is read.
const MaxFrame = 64 << 10

// Operations a request names.
const (
	// OpDescribe asks which key a URI names: the response's Key.
	OpDescribe = "describe"
	// OpWrap wraps Data under the URI's key, bound to Context.
	OpWrap = "wrap"
	// OpUnwrap unwraps Data, which OpWrap returned for the same Context.
	OpUnwrap = "unwrap"
)

// Request is what ward sends a plug-in: one frame on its standard input.
type Request struct {
	Version int    `json:"version"`
	Op      string `json:"op"`
	// URI is the key URL as the user gave it (pkcs11:token=…;object=…).
	URI string `json:"uri"`
	// Data is the plaintext to wrap or the blob to unwrap (base64 in
	// the JSON); empty for describe.
	Data []byte `json:"data,omitempty"`
	// Context is the encryption context, as kms.CanonicalContext encodes
	// it: the plug-in binds it to what it wraps (as AEAD associated
	// data), so that an unwrap under another context fails.
	Context []byte `json:"context,omitempty"`
}

// Key names a plug-in's key publicly, as kms.KeyRef does.
type Key struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
}

// Response is what a plug-in answers: one frame on its standard output,
// holding either Data (wrap, unwrap), Key (describe) or Error.
type Response struct {
	Version int    `json:"version"`
	Data    []byte `json:"data,omitempty"`
	Key     *Key   `json:"key,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// Error is a plug-in's failure: Kind is one of the kinds below, Message
// says what happened, without secrets (ward prints it, bounded and with
// control characters escaped).
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ErrFrame means a frame did not parse: a length over MaxFrame, a short
// body, JSON that is not the message, or another protocol version.
var ErrFrame = errors.New("plugin: malformed frame")

// WriteFrame writes v as one frame: its JSON encoding (without HTML
// escapes: a URI's & stays &), after its length as a 4-byte big-endian
// number.
func WriteFrame(w io.Writer, v any) error {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Errorf("plugin: encoding a frame: %w", err)
	}
	body := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
	if len(body) > MaxFrame {
		return fmt.Errorf("%w: %d bytes, over %d", ErrFrame, len(body), MaxFrame)
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	frame = append(frame, body...)
	_, err := w.Write(frame)
	clear(frame)
	clear(enc.Bytes())
	return err
}

// readBody reads one frame's body from r, refusing a length over MaxFrame
// before reading it.
func readBody(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("%w: no length: %w", ErrFrame, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxFrame {
		return nil, fmt.Errorf("%w: a body of %d bytes, over %d", ErrFrame, size, MaxFrame)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: the body is short: %w", ErrFrame, err)
	}
	return body, nil
}

// decode parses a frame's body into v, refusing trailing data.
func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", ErrFrame, err)
	}
	return nil
}

// ReadRequest reads one request frame (the plug-in's side), checking its
// version and operation.
func ReadRequest(r io.Reader) (*Request, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	defer clear(body)
	var req Request
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if req.Version != Version {
		return nil, fmt.Errorf("%w: version %d, this side speaks %d", ErrFrame, req.Version, Version)
	}
	switch req.Op {
	case OpDescribe, OpWrap, OpUnwrap:
	default:
		return nil, fmt.Errorf("%w: unknown operation %.40q", ErrFrame, req.Op)
	}
	return &req, nil
}

// ReadResponse reads one response frame (ward's side), checking its
// version and that it holds exactly one of data, key or error.
func ReadResponse(r io.Reader) (*Response, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	defer clear(body)
	var resp Response
	if err := decode(body, &resp); err != nil {
		return nil, err
	}
	if resp.Version != Version {
		return nil, fmt.Errorf("%w: version %d, this side speaks %d", ErrFrame, resp.Version, Version)
	}
	held := 0
	for _, set := range []bool{resp.Data != nil, resp.Key != nil, resp.Error != nil} {
		if set {
			held++
		}
	}
	if held != 1 {
		return nil, fmt.Errorf("%w: a response holds exactly one of data, key and error (%d here)", ErrFrame, held)
	}
	return &resp, nil
}
