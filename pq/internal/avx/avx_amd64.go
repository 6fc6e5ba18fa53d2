//go:build amd64 && !purego

package avx

import "golang.org/x/sys/cpu"

var hasAVX = cpu.X86.HasAVX

// vzeroupper zeroes the upper 128 bits of every YMM register.
//
//go:noescape
func vzeroupper()
