package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/kms"
)

// ErrNotFound means no executable ward-kms-<scheme> is on PATH.
var ErrNotFound = errors.New("plugin: no plug-in for the scheme on PATH")

// maxWrap is the most a plug-in wraps, as kms.KeyService allows.
const maxWrap = 4096

// maxMessage bounds what ward prints of a plug-in's error message.
const maxMessage = 512

// schemeName is what a plug-in's scheme may be: lower-case letters,
// digits and hyphens, so that the executable's name is only ever
// ward-kms- followed by them.
var schemeName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Service is a kms.KeyService whose key lives behind a plug-in: each call
// starts ward-kms-<scheme> with the request on its standard input and
// reads the response from its standard output. Its standard error is not
// read: a plug-in's own messages (a driver's, a token's) may hold what
// ward must never print.
type Service struct {
	path, uri string
	key       kms.KeyRef
}

var _ kms.KeyService = (*Service)(nil)

// Executable returns the name of the plug-in that serves scheme.
func Executable(scheme string) string { return "ward-kms-" + scheme }

// Open finds the plug-in for uri's scheme on PATH and asks it which key
// the URI names (the describe operation). A missing plug-in is an error
// matching ErrNotFound and kms.ErrMisconfigured.
func Open(ctx context.Context, uri string) (*Service, error) {
	u, err := url.Parse(uri)
	if err != nil || !schemeName.MatchString(u.Scheme) {
		return nil, &kms.ServiceError{Op: "Open", Kind: kms.ErrMisconfigured,
			Err: errors.New("plugin: a key URL's scheme is lower-case letters, digits and hyphens (pkcs11:…)")}
	}
	name := Executable(u.Scheme)
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, &kms.ServiceError{Op: "Open", Key: kms.KeyRef{Provider: u.Scheme}, Kind: kms.ErrMisconfigured,
			Err: fmt.Errorf("%w: %s: %w", ErrNotFound, name, err)}
	}
	s := &Service{path: path, uri: uri, key: kms.KeyRef{Provider: u.Scheme}}
	resp, err := s.call(ctx, "Describe", Request{Op: OpDescribe})
	if err != nil {
		return nil, err
	}
	if resp.Key == nil || resp.Key.Provider != u.Scheme || !publicName(resp.Key.ID) {
		return nil, s.fail("Describe", kms.ErrMisconfigured, errors.New("the plug-in described no key of its scheme, or an ID that is not 1 to 256 printable characters"))
	}
	s.key.ID = resp.Key.ID
	return s, nil
}

// publicName reports whether id can be printed and stored as a key ID.
func publicName(id string) bool {
	return id != "" && len(id) <= 256 && utf8.ValidString(id) && printable.String(id) == id
}

// Key names the plug-in's key: its scheme and the ID it described.
func (s *Service) Key() kms.KeyRef { return s.key }

// Encrypt wraps plaintext (1 byte to 4 KiB) under the plug-in's key,
// bound to encryptionContext.
func (s *Service) Encrypt(ctx context.Context, plaintext []byte, encryptionContext map[string]string) ([]byte, error) {
	if len(plaintext) == 0 || len(plaintext) > maxWrap {
		return nil, s.fail("Encrypt", kms.ErrMisconfigured, fmt.Errorf("a plug-in wraps 1 to %d bytes, not %d", maxWrap, len(plaintext)))
	}
	resp, err := s.call(ctx, "Encrypt", Request{Op: OpWrap, Data: plaintext, Context: kms.CanonicalContext(encryptionContext)})
	if err != nil {
		return nil, err
	}
	if resp.Data == nil {
		return nil, s.fail("Encrypt", kms.ErrMisconfigured, errors.New("the plug-in answered a wrap without data"))
	}
	return resp.Data, nil
}

// Decrypt unwraps what Encrypt returned for the same encryptionContext.
func (s *Service) Decrypt(ctx context.Context, ciphertext []byte, encryptionContext map[string]string) ([]byte, error) {
	if len(ciphertext) == 0 || len(ciphertext) > MaxFrame/2 {
		return nil, s.fail("Decrypt", kms.ErrInvalidCiphertext, fmt.Errorf("a wrapped key of %d bytes", len(ciphertext)))
	}
	resp, err := s.call(ctx, "Decrypt", Request{Op: OpUnwrap, Data: ciphertext, Context: kms.CanonicalContext(encryptionContext)})
	if err != nil {
		return nil, err
	}
	if resp.Data == nil {
		return nil, s.fail("Decrypt", kms.ErrMisconfigured, errors.New("the plug-in answered an unwrap without data"))
	}
	return resp.Data, nil
}

// fail is a ServiceError of the plug-in's key.
func (s *Service) fail(op string, kind, err error) error {
	return &kms.ServiceError{Op: op, Key: s.key, Kind: kind, Err: fmt.Errorf("plugin %s: %w", Executable(s.key.Provider), err)}
}

// call runs the plug-in once with req and returns its response; a
// response that reports an error is returned as that error.
func (s *Service) call(ctx context.Context, op string, req Request) (*Response, error) {
	req.Version, req.URI = Version, s.uri
	var in bytes.Buffer
	if err := WriteFrame(&in, req); err != nil {
		return nil, s.fail(op, kms.ErrMisconfigured, err)
	}
	out := &capped{max: 4 + MaxFrame}
	cmd := exec.CommandContext(ctx, s.path)
	cmd.Env = pluginEnv(os.Environ())
	cmd.Stdin, cmd.Stdout = &in, out
	cmd.WaitDelay = 2 * time.Second
	runErr := cmd.Run()
	defer func() { clear(out.buf.Bytes()) }() // the frame holds a wrap's key in base64
	clear(in.Bytes())
	if ctx.Err() != nil {
		return nil, s.fail(op, kms.ErrUnavailable, ctx.Err())
	}
	resp, err := ReadResponse(&out.buf)
	switch {
	case err != nil && runErr != nil:
		return nil, s.fail(op, kms.ErrUnavailable, fmt.Errorf("it ended without answering (%v)", runErr))
	case err != nil:
		return nil, s.fail(op, kms.ErrMisconfigured, err)
	case resp.Error != nil:
		kind := kindOf(resp.Error.Kind)
		msg := resp.Error.Message
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		return nil, s.fail(op, kind, errors.New(printable.String(msg)))
	}
	return resp, nil
}

// withheld are the variables of ward's environment a plug-in does not
// get: the master key, and the database URLs that may hold a password.
var withheld = []string{"WARD_MASTER_KEY", "WARD_DB", "WARD_TEST_POSTGRES_URL", "WARD_TEST_MYSQL_URL", "MYSQL_PWD", "PGPASSWORD"}

// pluginEnv is env without the withheld variables.
func pluginEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(withheld, name) {
			out = append(out, kv)
		}
	}
	return out
}

// capped collects a plug-in's output up to max bytes and refuses more,
// so a plug-in that writes without end costs bounded memory.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		return 0, fmt.Errorf("%w: the plug-in wrote over %d bytes", ErrFrame, c.max)
	}
	return c.buf.Write(p)
}
