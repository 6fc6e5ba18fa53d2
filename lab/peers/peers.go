// Package peers runs the field reports' own stacks on this machine, so the
// lab can set them beside ward in the same run: small programs in the
// reports' languages and libraries, whose sources are in this folder and
// embedded in the ward binary, built and run with the runtimes the machine
// has (Java and BouncyCastle, Ruby's OpenSSL, Python's cryptography, C with
// libargon2 and libsodium, Rust's argon2 crate with cargo). The Go module
// itself has no cgo.
//
// Each runner returns a [*MissingError] naming the Debian packages that
// bring what is missing, so that the lab can say so instead of reporting
// anything.
package peers

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed java/*.java ruby/*.rb python/*.py c/*.c c/*.h rust/Cargo.toml rust/Cargo.lock rust/src/*.rs
var sources embed.FS

// MissingError says that a peer cannot run here, and what would bring it.
type MissingError struct {
	Peer    string // "java/Argon2Bench", …
	Need    string // what is missing
	Install string // the command that brings it
}

// Error puts what brings the peer first: a reader of the report's "not
// run here" box sees the command before the reason.
func (e *MissingError) Error() string {
	return fmt.Sprintf("%s brings what %s needs (%s)", e.Install, e.Peer, e.Need)
}

// ErrMissing matches every MissingError.
var ErrMissing = errors.New("peers: not available on this machine")

// Is reports whether target is ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Runner builds and runs peers in a private temporary folder. Each peer
// is compiled once per Runner, however often it runs.
type Runner struct {
	dir   string
	mu    sync.Mutex
	built map[string]built // by source
}

type built struct {
	path string
	err  error
}

// once builds src with build the first time it is asked for, and returns
// that result afterwards.
func (r *Runner) once(src string, build func() (string, error)) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.built[src]; ok {
		return b.path, b.err
	}
	path, err := build()
	if r.built == nil {
		r.built = map[string]built{}
	}
	r.built[src] = built{path, err}
	return path, err
}

// New writes the peers' sources to a temporary folder.
func New() (*Runner, error) {
	dir, err := os.MkdirTemp("", "ward-peers-")
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Runner{dir: dir}, nil
}

// Close removes the folder.
func (r *Runner) Close() error { return os.RemoveAll(r.dir) }

// path returns the path of a source file in the folder.
func (r *Runner) path(p string) string { return filepath.Join(r.dir, p) }

// need returns the path of an executable or a MissingError.
func need(peer, name, install string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", &MissingError{Peer: peer, Need: name, Install: install}
	}
	return p, nil
}

// runJSON runs a command and decodes its standard output as JSON.
func runJSON(ctx context.Context, out any, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("peers: %s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("peers: %s: output is not the expected JSON: %w", filepath.Base(name), err)
	}
	return nil
}

// withoutPaths drops the lab's temporary folder from a compiler's message
// ("/tmp/ward-peers-123/argon2.c:1:10: fatal error: …" → "argon2.c:1:10: …").
func withoutPaths(s string) string {
	f := strings.Fields(s)
	for i, w := range f {
		if strings.HasPrefix(w, "/") {
			f[i] = filepath.Base(w)
		}
	}
	return strings.Join(f, " ")
}

// buildC compiles a C peer against the given libraries (and optional
// include and library folders) and returns the binary.
func (r *Runner) buildC(ctx context.Context, peer, src, out string, flags []string, install string) (string, error) {
	return r.once(src, func() (string, error) { return r.cc(ctx, peer, src, out, flags, install) })
}

func (r *Runner) cc(ctx context.Context, peer, src, out string, flags []string, install string) (string, error) {
	cc, err := need(peer, "cc", "apt-get install gcc")
	if err != nil {
		return "", err
	}
	bin := r.path(out)
	args := append([]string{"-O2", "-o", bin, r.path(src)}, flags...)
	if b, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
		return "", &MissingError{Peer: peer, Need: "a C library to build against (the compiler said: " + strings.TrimSpace(withoutPaths(firstLine(string(b)))) + ")", Install: install}
	}
	return bin, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// execOutput runs a command and returns its combined output.
func execOutput(ctx context.Context, name string, args ...string) (string, error) {
	b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(b)), err
}
