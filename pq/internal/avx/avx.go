// Package avx ends the 256-bit AVX state that assembly without VZEROUPPER
// leaves behind.
//
// circl's AVX2 code for ML-KEM (Kyber), ML-DSA (Dilithium) and the 4-way
// Keccak returns with the upper halves of the YMM registers in use. Until
// a VZEROUPPER, every legacy-SSE instruction the thread runs afterwards —
// SHA-NI, the SSE moves Go's compiler emits for copies and zeroing — pays
// a transition penalty, and the state lasts, across goroutine switches,
// until something clears it. On the 2-core AMD EPYC VM of the lab an HKDF
// expansion right after a circl ML-KEM-512 decapsulation took ~17 µs
// instead of ~1.1 µs (BenchmarkAfterCircl: decapsulation and expansion
// 40.5 µs, 22.0 µs with ZeroUpper between them). The handshake's circl
// backend calls ZeroUpper after every circl call, as the standard
// library's own AVX code ends with VZEROUPPER.
package avx

// ZeroUpper executes VZEROUPPER on CPUs with AVX; elsewhere it does
// nothing.
func ZeroUpper() {
	if hasAVX {
		vzeroupper()
	}
}
