// Package aeadlab is the lab scenario "aead", which reproduces seed 000: AEAD seal and
// open throughput with hardware AES on and off, and the cost of ward's
// field layer over raw crypto/cipher.
//
// Hardware AES is switched off in a child process with GODEBUG=cpu.aes=off,
// the Go analogue of the seed's -XX:-UseAESIntrinsics.
package aeadlab

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

// Scenario is the "aead" lab scenario.
type Scenario struct{}

var _ lab.ChildScenario = Scenario{}

// Name returns "aead".
func (Scenario) Name() string { return "aead" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 000: AES-GCM/XChaCha20-Poly1305 seal+open by size, hardware AES on vs off, field layer overhead"
}

// Sizes are the plaintext sizes measured: a short value, a chat message,
// a page and the seed's 1 MiB buffer.
var Sizes = []int{64, 500, 4096, 1 << 20}

// HWOffEnv is the environment that disables hardware AES in the child.
const HWOffEnv = "GODEBUG=cpu.aes=off"

type caseKey struct {
	alg  keyring.Algorithm
	op   string
	size int
	impl string
	hw   string
}

func (k caseKey) name() string {
	return fmt.Sprintf("%v/%s/%s/%s/aes-hw-%s", k.alg, k.op, sizeName(k.size), k.impl, k.hw)
}

func (k caseKey) params() map[string]any {
	return map[string]any{"alg": k.alg.String(), "op": k.op, "size": k.size, "impl": k.impl, "aes_hw": k.hw}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// Run measures raw AEADs and the field layer with hardware AES on (this
// process), raw AEADs with it off (a child), and derives the ratios.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	impls := []string{"raw", "field"}
	total := len(keyring.Algorithms()) * len(Sizes) * 2 * len(impls)
	done := 0
	times := map[caseKey]float64{}
	for _, alg := range keyring.Algorithms() {
		for _, size := range Sizes {
			for _, op := range []string{"seal", "open"} {
				for _, impl := range impls {
					k := caseKey{alg, op, size, impl, "on"}
					r, err := measure(ctx, env, k)
					if err != nil {
						return err
					}
					times[k] = r.Median
					done++
					env.Progress(done, total+total/4)
				}
			}
		}
	}
	fmt.Fprintf(env.Log, "aead: measuring with %s in a child process\n", HWOffEnv)
	off, err := env.RunChild(ctx, []string{HWOffEnv})
	if err != nil {
		return err
	}
	env.Record(off...)
	for _, r := range off {
		if r.Metric == "time" {
			times[keyFromParams(r.Params)] = r.Median
		}
	}
	env.Progress(total+total/4, total+total/4)

	// Derived ratios, from medians measured in this run.
	for _, alg := range keyring.Algorithms() {
		for _, size := range Sizes {
			for _, op := range []string{"seal", "open"} {
				on, off := times[caseKey{alg, op, size, "raw", "on"}], times[caseKey{alg, op, size, "raw", "off"}]
				if on > 0 && off > 0 {
					k := caseKey{alg, op, size, "raw", "on-vs-off"}
					env.Record(lab.Derived("aead", fmt.Sprintf("%v/%s/%s/raw/aes-hw-speedup", alg, op, sizeName(size)), k.params(),
						"hw_speedup", "x", off/on, "median time with GODEBUG=cpu.aes=off divided by median time with hardware AES"))
				}
				raw, fld := times[caseKey{alg, op, size, "raw", "on"}], times[caseKey{alg, op, size, "field", "on"}]
				if raw > 0 && fld > 0 {
					k := caseKey{alg, op, size, "field-vs-raw", "on"}
					env.Record(lab.Derived("aead", fmt.Sprintf("%v/%s/%s/field-overhead", alg, op, sizeName(size)), k.params(),
						"field_overhead", "%", (fld/raw-1)*100, "ward field layer median time over raw crypto/cipher median time, minus 1"))
				}
			}
		}
	}
	seedParams := map[string]any{"alg": "AES-128-GCM", "op": "seal", "size": 1 << 20, "impl": "java", "aes_hw": "on-vs-off"}
	env.Record(
		lab.Quote("aead", "seed/java-aes-gcm/isolated", seedParams, "hw_speedup", "x", 1.67, "seed",
			"seed 000: Java AES/GCM/NoPadding, 1 MiB buffer, 10 warm-up + 1000 encryptions, AES intrinsics on vs off, run isolated"),
		lab.Quote("aead", "seed/java-aes-gcm/5M-ops", seedParams, "hw_speedup", "x", 5.72, "seed",
			"seed 000: the same over 5,000,000 operations"),
	)
	return nil
}

// RunChild measures the raw AEADs only; it runs with hardware AES off.
func (s Scenario) RunChild(ctx context.Context, env *lab.Env, _ []string) error {
	hw := "on"
	if strings.Contains(os.Getenv("GODEBUG"), "cpu.aes=off") {
		hw = "off"
	}
	for _, alg := range keyring.Algorithms() {
		for _, size := range Sizes {
			for _, op := range []string{"seal", "open"} {
				if _, err := measure(ctx, env, caseKey{alg, op, size, "raw", hw}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func keyFromParams(p map[string]any) caseKey {
	alg, _ := keyring.ParseAlgorithm(fmt.Sprint(p["alg"]))
	size := 0
	switch v := p["size"].(type) {
	case float64:
		size = int(v)
	case int:
		size = v
	}
	return caseKey{alg, fmt.Sprint(p["op"]), size, fmt.Sprint(p["impl"]), fmt.Sprint(p["aes_hw"])}
}

// measure records time and throughput for one case and returns the time.
func measure(ctx context.Context, env *lab.Env, k caseKey) (lab.Result, error) {
	op, err := newOp(k)
	if err != nil {
		return lab.Result{}, err
	}
	samples, err := lab.Measure(ctx, env.Sampling, op)
	if err != nil {
		return lab.Result{}, fmt.Errorf("aead: %s: %w", k.name(), err)
	}
	t := lab.FromSamples("", k.name(), k.params(), "time", "ns/op", samples)
	mbps := make([]float64, len(samples))
	for i, ns := range samples {
		mbps[i] = float64(k.size) / ns * 1e3 // bytes/ns → MB/s
	}
	env.Record(t, lab.FromSamples("", k.name(), k.params(), "throughput", "MB/s", mbps))
	return t, nil
}

// newOp returns a function that seals or opens n values of the case's
// size. Output buffers are reused, so the numbers measure cryptography and
// formatting, not the allocator.
func newOp(k caseKey) (func(n int) error, error) {
	pt := make([]byte, k.size)
	rand.Read(pt)
	switch k.impl {
	case "raw":
		key := make([]byte, k.alg.KeySize())
		rand.Read(key)
		var a cipher.AEAD
		var err error
		if k.alg == keyring.XChaCha20Poly1305 {
			a, err = chacha20poly1305.NewX(key)
		} else {
			var b cipher.Block
			if b, err = aes.NewCipher(key); err == nil {
				a, err = cipher.NewGCM(b)
			}
		}
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, a.NonceSize())
		ct := a.Seal(nil, nonce, pt, nil)
		out := make([]byte, 0, k.size)
		if k.op == "seal" {
			return func(n int) error {
				for range n {
					rand.Read(nonce)
					ct = a.Seal(ct[:0], nonce, pt, nil)
				}
				return nil
			}, nil
		}
		return func(n int) error {
			for range n {
				var err error
				if out, err = a.Open(out[:0], nonce, ct, nil); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case "field":
		kr, err := keyring.New(k.alg)
		if err != nil {
			return nil, err
		}
		col, err := field.NewColumn(kr, "messages", "body")
		if err != nil {
			return nil, err
		}
		row := field.RowInt(123456)
		ct, err := col.AppendSeal(nil, row, pt)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, k.size)
		if k.op == "seal" {
			return func(n int) error {
				var err error
				for range n {
					if ct, err = col.AppendSeal(ct[:0], row, pt); err != nil {
						return err
					}
				}
				return nil
			}, nil
		}
		return func(n int) error {
			var err error
			for range n {
				if out, err = col.AppendOpen(out[:0], row, ct); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("aead: unknown implementation %q", k.impl)
}
