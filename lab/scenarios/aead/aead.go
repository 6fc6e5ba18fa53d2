// Package aeadlab is the lab scenario "aead", which reproduces the field
// report on encrypting chat messages in the database: AEAD seal and open
// throughput with hardware AES on and off, and the cost of ward's field
// layer over raw crypto/cipher.
//
// Hardware AES is switched off in a child process with GODEBUG=cpu.aes=off,
// the Go analogue of the report's -XX:-UseAESIntrinsics.
package aeadlab

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/fips140"
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

// Scenario is the "aead" lab scenario.
type Scenario struct{}

var _ lab.ChildScenario = Scenario{}

// Name returns "aead".
func (Scenario) Name() string { return "aead" }

// Title names the topic.
func (Scenario) Title() string { return "Field encryption for databases: what AES-GCM costs" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does AES-GCM cost per value, with and without AES hardware, and what does ward's field layer add on top of raw crypto/cipher?"
}

// Sizes are the plaintext sizes measured: a short value, a chat message,
// a page and the field report's 1 MiB buffer.
var Sizes = []int{64, 500, 4096, 1 << 20}

// HWOffEnv is the environment that disables hardware AES in the child.
const HWOffEnv = "GODEBUG=cpu.aes=off"

// FIPSEnv is the environment of the child that measures in the FIPS 140-3
// mode: AES-GCM only, the module drawing every nonce.
const FIPSEnv = "GODEBUG=fips140=only"

// caseKey names one measured case; Run records it and Report looks it up.
type caseKey struct {
	alg  keyring.Algorithm
	op   string // seal or open
	size int
	impl string // raw, field (ciphertext v4) or field-v3
	hw   string // on or off; "fips" for the FIPS 140-3 mode's child (hardware on)
}

// The field layer's implementations: ciphertext v4 (what it writes) and
// v3 (what a fleet that has not opened v4 writes).
const (
	implV4 = "field"
	implV3 = "field-v3"
)

func (k caseKey) name() string {
	return fmt.Sprintf("%v/%s/%s/%s/aes-hw-%s", k.alg, k.op, sizeName(k.size), k.impl, k.hw)
}

func (k caseKey) params() map[string]any {
	return map[string]any{"alg": k.alg.String(), "op": k.op, "size": k.size, "impl": k.impl, "aes_hw": k.hw}
}

// ratioKey names a derived ratio of a case.
type ratioKey struct {
	alg  keyring.Algorithm
	op   string
	size int
}

func (k ratioKey) hwSpeedup() string {
	return fmt.Sprintf("%v/%s/%s/raw/aes-hw-speedup", k.alg, k.op, sizeName(k.size))
}
func (k ratioKey) fieldOverhead() string {
	return fmt.Sprintf("%v/%s/%s/field-vs-raw", k.alg, k.op, sizeName(k.size))
}
func (k ratioKey) v3Overhead() string {
	return fmt.Sprintf("%v/%s/%s/field-v3-vs-raw", k.alg, k.op, sizeName(k.size))
}
func (k ratioKey) addedNs(impl string) string {
	return fmt.Sprintf("%v/%s/%s/%s-minus-raw", k.alg, k.op, sizeName(k.size), impl)
}
func (k ratioKey) fipsOverhead() string {
	return fmt.Sprintf("%v/%s/%s/field-vs-raw/fips140-only", k.alg, k.op, sizeName(k.size))
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

// fieldReport are the field report's figures: the speed-up from AES
// intrinsics in the JVM, measured elsewhere.
var fieldReport = []lab.Result{
	lab.Quote("aead", "field-report/java-aes-gcm/isolated", map[string]any{"alg": "AES-128-GCM", "op": "seal", "size": 1 << 20, "impl": "java"},
		"hw_speedup", "x", 1.67, lab.SourceFieldReport, "Java AES/GCM/NoPadding, 1 MiB buffer, 10 warm-up + 1000 encryptions, AES intrinsics on vs off, run isolated"),
	lab.Quote("aead", "field-report/java-aes-gcm/5M-ops", map[string]any{"alg": "AES-128-GCM", "op": "seal", "size": 1 << 20, "impl": "java"},
		"hw_speedup", "x", 5.72, lab.SourceFieldReport, "the same over 5,000,000 operations"),
}

// Run measures raw AEADs and the field layer, interleaved, with hardware
// AES on (this process), raw AEADs with it off (a child), and derives the
// ratios with their spread.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	total := len(keyring.Algorithms()) * len(Sizes) * 2
	done := 0
	samples := map[caseKey][]float64{}
	fieldNs := map[caseKey][]float64{} // the v4 rounds, for the Python package beside them
	for _, alg := range keyring.Algorithms() {
		for _, size := range Sizes {
			for _, op := range []string{"seal", "open"} {
				raw := caseKey{alg, op, size, "raw", "on"}
				rounds, err := measureField(ctx, env, raw)
				if err != nil {
					return err
				}
				samples[raw] = rounds[0]
				fieldNs[caseKey{alg, op, size, implV4, "on"}] = rounds[1]
				done++
				env.Progress(done, total+total/4)
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
			k := keyFromParams(r.Params)
			on := samples[caseKey{k.alg, k.op, k.size, "raw", "on"}]
			p := k.params()
			p["aes_hw"] = "off-vs-on"
			env.Record(lab.CrossRatio("aead", ratioKey{k.alg, k.op, k.size}.hwSpeedup(), p, "hw_speedup", r.Samples, on,
				"time with GODEBUG=cpu.aes=off over time with hardware AES (two processes: every pair of batches)"))
		}
	}
	ward := map[int][]float64{}
	for _, size := range Sizes {
		for _, ns := range samples[caseKey{keyring.AES128GCM, "seal", size, "raw", "on"}] {
			ward[size] = append(ward[size], float64(size)/ns*1e3)
		}
	}
	jvmPeer(ctx, env, ward)
	pythonPeer(ctx, env, fieldNs)
	javaFieldPeer(ctx, env, fieldNs)
	fmt.Fprintf(env.Log, "aead: measuring with %s in a child process\n", FIPSEnv)
	fips, err := env.RunChild(ctx, []string{FIPSEnv})
	if err != nil {
		return err
	}
	env.Record(fips...)
	env.Progress(1, 1)
	env.Record(fieldReport...)
	return nil
}

// RunChild measures the raw AEADs only with hardware AES off, or, in the
// FIPS 140-3 mode, raw AES-GCM and the field layer.
func (s Scenario) RunChild(ctx context.Context, env *lab.Env, _ []string) error {
	if fips140.Enabled() {
		return runFIPS(ctx, env)
	}
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
	alg, _ := keyring.ParseAlgorithm(lab.Str(p, "alg"))
	return caseKey{alg, lab.Str(p, "op"), int(lab.Num(p, "size")), lab.Str(p, "impl"), lab.Str(p, "aes_hw")}
}

// measure records time and throughput for the cases, measured in
// interleaved rounds, and returns their samples (ns/op).
func measure(ctx context.Context, env *lab.Env, keys ...caseKey) ([][]float64, error) {
	ops := make([]func(int) error, len(keys))
	for i, k := range keys {
		var err error
		if ops[i], err = newOp(k); err != nil {
			return nil, err
		}
	}
	// One thread's CPU time over many short batches: each case seals or
	// opens on the measuring goroutine alone, with reused buffers.
	rounds, err := lab.Interleave(ctx, env.Sampling.CPU(), ops...)
	if err != nil {
		return nil, fmt.Errorf("aead: %s: %w", keys[0].name(), err)
	}
	for i, k := range keys {
		mbps := make([]float64, len(rounds[i]))
		for j, ns := range rounds[i] {
			mbps[j] = float64(k.size) / ns * 1e3 // bytes/ns → MB/s
		}
		env.Record(lab.FromSamples("", k.name(), k.params(), "time", "ns/op", rounds[i]),
			lab.FromSamples("", k.name(), k.params(), "throughput", "MB/s", mbps))
	}
	return rounds, nil
}

// newOp returns a function that seals or opens n values of the case's
// size. Output buffers are reused, so the numbers measure cryptography and
// formatting, not the allocator.
func newOp(k caseKey) (func(n int) error, error) {
	pt := make([]byte, k.size)
	rand.Read(pt)
	switch k.impl {
	case "raw":
		return rawOp(k, pt)
	case implV4, implV3:
		return fieldOp(k, pt)
	case implTink:
		return tinkOp(k, pt)
	}
	return nil, fmt.Errorf("aead: unknown implementation %q", k.impl)
}

func rawOp(k caseKey, pt []byte) (func(n int) error, error) {
	key := make([]byte, k.alg.KeySize())
	rand.Read(key)
	if k.hw == "fips" {
		return rawFIPSOp(k, key, pt)
	}
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
}

func fieldOp(k caseKey, pt []byte) (func(n int) error, error) {
	kr, err := keyring.New(k.alg)
	if err != nil {
		return nil, err
	}
	var opts []field.ColumnOption
	if k.impl == implV3 {
		opts = append(opts, field.WithForms(fleetgate.New())) // v4 not open: v3
	}
	col, err := field.NewColumn(kr, "messages", "body", opts...)
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
