//go:build !amd64 || purego

package avx

const hasAVX = false

func vzeroupper() {}
