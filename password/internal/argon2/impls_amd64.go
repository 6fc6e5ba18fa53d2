//go:build amd64 && !purego

package argon2

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "cd _asm && GOWORK=off go run . -out ../g_amd64.s -stubs ../g_amd64_stubs.go -pkg argon2"

// available lists the implementations of G this machine can run, slowest
// first.
func available() []implementation {
	list := []implementation{{"generic", gGeneric}}
	if cpu.X86.HasAVX2 {
		list = append(list, implementation{"avx2", gAVX2})
	}
	if cpu.X86.HasAVX512F {
		list = append(list, implementation{"avx512", gAVX512})
	}
	return list
}

// ImplEnv names an environment variable that forces one implementation
// ("generic", "avx2" or "avx512", if the CPU has it), for measuring one
// path against another; by default the fastest is used.
const ImplEnv = "WARD_ARGON2_IMPL"

func init() {
	all := available()
	impl = all[len(all)-1]
	if want := os.Getenv(ImplEnv); want != "" {
		for _, im := range all {
			if im.name == want {
				impl = im
			}
		}
	}
}
