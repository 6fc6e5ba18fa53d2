package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/wardlab/ward/kms"
)

// Handler is a plug-in's key service: each method serves one operation
// for the key uri names. Errors should match one of the kms kinds
// (kms.ErrUnknownKey, kms.ErrAccessDenied, …; see KindName) and hold no
// secret: their text reaches ward's output.
type Handler interface {
	// Describe returns the key uri names; its Provider is the scheme.
	Describe(ctx context.Context, uri string) (kms.KeyRef, error)
	// Wrap wraps plaintext under the key, bound to context (the
	// encryption context, canonically encoded).
	Wrap(ctx context.Context, uri string, plaintext, context []byte) ([]byte, error)
	// Unwrap unwraps what Wrap returned for the same context, failing
	// with kms.ErrInvalidCiphertext for a blob of another key or context.
	Unwrap(ctx context.Context, uri string, wrapped, context []byte) ([]byte, error)
}

// Serve answers one request: it reads the request frame from r, calls h,
// and writes the response frame to w. A malformed request is answered
// with a misconfigured error (and returned); a handler's error is
// answered with its kind, and Serve returns nil.
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler) error {
	req, err := ReadRequest(r)
	if err != nil {
		if werr := WriteFrame(w, Response{Version: Version, Error: &Error{Kind: "misconfigured", Message: err.Error()}}); werr != nil {
			return werr
		}
		return err
	}
	defer clear(req.Data)
	resp := Response{Version: Version}
	switch req.Op {
	case OpDescribe:
		var k kms.KeyRef
		if k, err = h.Describe(ctx, req.URI); err == nil {
			resp.Key = &Key{Provider: k.Provider, ID: k.ID}
		}
	case OpWrap:
		resp.Data, err = h.Wrap(ctx, req.URI, req.Data, req.Context)
	case OpUnwrap:
		resp.Data, err = h.Unwrap(ctx, req.URI, req.Data, req.Context)
	}
	if err == nil && resp.Key == nil && resp.Data == nil {
		err = fmt.Errorf("%w: the plug-in's %s returned nothing", kms.ErrMisconfigured, req.Op)
	}
	if err != nil {
		resp = Response{Version: Version, Error: &Error{Kind: KindName(err), Message: err.Error()}}
	}
	defer clear(resp.Data)
	return WriteFrame(w, resp)
}
