package aeadlab

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

// measureField measures raw crypto/cipher, the field layer's ciphertext v4
// and v3 in interleaved rounds, and records each layer's time over raw
// (a ratio per round) and the nanoseconds it adds (a difference per
// round). It returns the rounds of raw, v4 and v3.
func measureField(ctx context.Context, env *lab.Env, raw caseKey) ([][]float64, error) {
	v4, v3 := raw, raw
	v4.impl, v3.impl = implV4, implV3
	tinkKey := raw
	tinkKey.impl = implTink
	keys := []caseKey{raw, v4}
	if raw.hw != "fips" {
		keys = append(keys, v3, tinkKey) // v3 is not sealed in the FIPS 140-3 mode; tink is measured beside the default
	}
	rounds, err := measure(ctx, env, keys...)
	if err != nil {
		return nil, err
	}
	r := ratioKey{raw.alg, raw.op, raw.size}
	if raw.hw == "fips" {
		p := v4.params()
		env.Record(lab.PairedRatio("aead", r.fipsOverhead(), p, "field_overhead", rounds[1], rounds[0],
			"per-round ratio of the field layer's time (v4) to raw AES-GCM's, both drawing nonces in the FIPS 140-3 module (GODEBUG=fips140=only)"))
		return rounds, nil
	}
	env.Record(lab.PairedRatio("aead", r.fieldOverhead(), v4.params(), "field_overhead", rounds[1], rounds[0],
		"per-round ratio of the field layer's time (ciphertext v4) to raw crypto/cipher's, interleaved rounds"),
		lab.PairedRatio("aead", r.v3Overhead(), v3.params(), "field_overhead", rounds[2], rounds[0],
			"per-round ratio of the field layer's time in ciphertext v3 to raw crypto/cipher's, interleaved rounds"),
		lab.FromSamples("aead", r.addedNs(implV4), v4.params(), "added_ns", "ns", minus(rounds[1], rounds[0])),
		lab.FromSamples("aead", r.addedNs(implV3), v3.params(), "added_ns", "ns", minus(rounds[2], rounds[0])))
	recordTink(env, r, tinkKey, rounds[0], rounds[1], rounds[3])
	return rounds, nil
}

// minus returns a[i] - b[i] for each interleaved round.
func minus(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		out = append(out, a[i]-b[i])
	}
	return out
}

// fipsSizes are the sizes the FIPS 140-3 child measures: the issue's
// short value and chat message, and the large buffer.
var fipsSizes = []int{64, 500, 1 << 20}

// runFIPS measures, in the FIPS 140-3 mode, raw AES-GCM drawing its nonces
// in the module and the field layer (ciphertext v4), interleaved.
func runFIPS(ctx context.Context, env *lab.Env) error {
	for _, alg := range []keyring.Algorithm{keyring.AES128GCM, keyring.AES256GCM} {
		for _, size := range fipsSizes {
			for _, op := range []string{"seal", "open"} {
				if _, err := measureField(ctx, env, caseKey{alg, op, size, "raw", "fips"}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// rawFIPSOp is raw AES-GCM in the FIPS 140-3 mode, where a caller's nonce
// is refused: the AEAD draws each nonce and puts it before the ciphertext.
func rawFIPSOp(k caseKey, key, pt []byte) (func(n int) error, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		return nil, fmt.Errorf("aead: %w", err)
	}
	ct := a.Seal(nil, nil, pt, nil)
	out := make([]byte, 0, k.size)
	if k.op == "seal" {
		return func(n int) error {
			for range n {
				ct = a.Seal(ct[:0], nil, pt, nil)
			}
			return nil
		}, nil
	}
	return func(n int) error {
		for range n {
			var err error
			if out, err = a.Open(out[:0], nil, ct, nil); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
