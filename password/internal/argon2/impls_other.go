//go:build !amd64 || purego

package argon2

// available lists the implementations of G this machine can run.
func available() []implementation { return []implementation{{"generic", gGeneric}} }

// ImplEnv names the environment variable that forces an implementation;
// only "generic" exists on this platform.
const ImplEnv = "WARD_ARGON2_IMPL"
