package peers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// installRust is what brings cargo.
const installRust = "install Rust with rustup (https://rustup.rs), then run the lab again"

// cargo returns the cargo on PATH, else rustup's in $HOME/.cargo/bin.
func cargo(peer string) (string, error) {
	if p, err := exec.LookPath("cargo"); err == nil {
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, ".cargo", "bin", "cargo"); isExecutable(p) {
			return p, nil
		}
	}
	return "", &MissingError{Peer: peer, Need: "cargo", Install: installRust}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// rustTarget is where cargo builds the Rust peers: a folder in the user's
// cache, so that a later lab run reuses the build (cargo rebuilds what
// changed).
func rustTarget(r *Runner) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "ward-lab", "cargo-target")
	}
	return r.path("rust/target")
}

// buildRust builds rust/ (its Cargo.lock pinned): offline first, from the
// crates cargo already holds (CI fetches them before its tests run
// without a network), then with crates.io.
func (r *Runner) buildRust(ctx context.Context) (string, error) {
	const peer = "rust/argon2_rust"
	return r.once("rust/Cargo.toml", func() (string, error) {
		c, err := cargo(peer)
		if err != nil {
			return "", err
		}
		target := rustTarget(r)
		build := func(extra ...string) ([]byte, error) {
			args := append([]string{"build", "--release", "--locked", "--quiet", "--manifest-path", r.path("rust/Cargo.toml")}, extra...)
			cmd := exec.CommandContext(ctx, c, args...)
			cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+target)
			return cmd.CombinedOutput()
		}
		if _, err := build("--offline"); err != nil {
			if out, err := build(); err != nil {
				return "", &MissingError{Peer: peer, Need: "the argon2 crate from crates.io (cargo said: " + strings.TrimSpace(withoutPaths(firstLine(string(out)))) + ")",
					Install: "cargo fetch --manifest-path lab/peers/rust/Cargo.toml, with crates.io reachable,"}
			}
		}
		return filepath.Join(target, "release", "argon2_rust"), nil
	})
}

// Argon2Rust runs rust/: Argon2id in the RustCrypto argon2 crate (0.6, its
// AVX2 code where the CPU has it), in a process of its own. It returns the
// hashes' times.
func (r *Runner) Argon2Rust(ctx context.Context, m, t, p uint32, n int) (Hashes, error) {
	bin, err := r.buildRust(ctx)
	if err != nil {
		return Hashes{}, err
	}
	var out msList
	if err := runJSON(ctx, &out, bin, strconv.Itoa(int(m)), strconv.Itoa(int(t)), strconv.Itoa(int(p)), strconv.Itoa(n)); err != nil {
		return Hashes{}, err
	}
	return out.hashes(n)
}
