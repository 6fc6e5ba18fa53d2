// Package jvmlab is the lab scenario "jvm": ward on the JVM measured by
// JMH, the JVM's own benchmark harness (java/ward-lab,
// io.github.wardlab.ward.bench). FieldBench times ward-java's seal and open
// of a column value (ciphertext v4, AES-256-GCM) at 64 B, 500 B and 16 KiB
// beside the JDK's AES-GCM on a value that carries its IV; PasswordBench
// times Spring Security's Argon2PasswordEncoder (the password field
// report's encoder) beside ward-java's WardPasswordEncoder at the same
// parameters and at ward's default, and a log-in on a hash Spring wrote.
// JMH forks a JVM per benchmark and runs them one after another, so their
// ratios are of samples not measured in the same rounds (CrossRatio).
package jvmlab

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
)

// Scenario is the "jvm" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "jvm".
func (Scenario) Name() string { return "jvm" }

// Title names the topic.
func (Scenario) Title() string { return "ward on the JVM, by JMH" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does ward-java cost a JVM service per column value and per password hash, measured by JMH beside the JDK's AES-GCM and Spring Security's Argon2 encoder?"
}

// Sizes are FieldBench's value sizes: a short value, the chat message, 16 KiB.
var Sizes = []int{64, 500, 16 << 10}

// fieldOps are FieldBench's benchmarks: ward-java's and the JDK's, per op.
var fieldOps = []struct{ op, ward, raw string }{{"seal", "wardSeal", "rawSeal"}, {"open", "wardOpen", "rawOpen"}}

// passwordCases are PasswordBench's benchmarks, in table order.
var passwordCases = []struct{ bench, label, params string }{
	{"springEncode", "Spring Argon2PasswordEncoder: encode", "m=16384,t=2,p=1"},
	{"wardEncodeSpringParams", "ward-java WardPasswordEncoder: encode, Spring's parameters", "m=16384,t=2,p=1"},
	{"wardEncode", "ward-java WardPasswordEncoder: encode, its default preset", "m=19456,t=2,p=1"},
	{"wardLoginOnSpringHash", "ward-java: log-in on Spring's hash (matches + upgradeEncoding)", "m=16384,t=2,p=1"},
}

func fieldCase(impl, op string, size int) string {
	return fmt.Sprintf("field/%s/%s/%dB", impl, op, size)
}
func fieldRatio(op string, size int) string { return fmt.Sprintf("ratio/ward-vs-jdk/%s/%dB", op, size) }
func passwordCase(bench string) string      { return "password/" + bench }

const passwordRatio = "ratio/ward-vs-spring/encode"

// profile is JMH's run for the lab's profile: the quick one is a smoke
// run (one fork, short iterations), the full one JMH-sized.
func profile(quick bool, include string) peers.JMHRun {
	if quick {
		return peers.JMHRun{Include: include, Forks: 1, Warmups: 1, Iterations: 3, Warmup: 200 * time.Millisecond, Measure: 200 * time.Millisecond}
	}
	return peers.JMHRun{Include: include, Forks: 2, Warmups: 3, Iterations: 5, Warmup: time.Second, Measure: time.Second}
}

// Run runs FieldBench on a fresh keyring and PasswordBench, and records
// every benchmark's iterations and the ratios.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	pr, err := peers.New()
	if err != nil {
		return err
	}
	defer pr.Close()
	dir, err := os.MkdirTemp("", "ward-lab-jvm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	mk := local.Generate()
	krPath, mkPath := filepath.Join(dir, "kr.json"), filepath.Join(dir, "mk.b64")
	if _, err := keyring.Create(ctx, krPath, mk, keyring.AES256GCM); err != nil {
		return err
	}
	if err := os.WriteFile(mkPath, []byte(mk.Encode()), 0o600); err != nil {
		return err
	}
	env.Progress(0, 2)
	field := profile(env.Quick, `\.FieldBench\.`)
	field.Params = map[string]string{"keyring": krPath, "masterKey": mkPath}
	fmt.Fprintln(env.Log, "jvm: JMH FieldBench")
	rs, err := pr.JMH(ctx, field)
	if err != nil {
		env.Record(lab.Unavailable("jvm", "jmh", lab.SourcePeer, err))
		return nil
	}
	recordField(env, rs, field)
	env.Progress(1, 2)
	fmt.Fprintln(env.Log, "jvm: JMH PasswordBench")
	pw := profile(env.Quick, `\.PasswordBench\.`)
	if rs, err = pr.JMH(ctx, pw); err != nil {
		env.Record(lab.Unavailable("jvm", "jmh-password", lab.SourcePeer, err))
		return nil
	}
	recordPassword(env, rs, pw)
	env.Progress(2, 2)
	return nil
}

// jmhParams are a result's parameters: JMH's profile and the benchmark's.
func jmhParams(run peers.JMHRun, r peers.JMHResult) map[string]any {
	p := map[string]any{"harness": "JMH 1.37", "forks": run.Forks, "iterations": run.Iterations,
		"iteration": run.Measure.String(), "benchmark": r.Benchmark, "jmh_score": r.Score}
	if !math.IsNaN(r.Error) { // JSON has no NaN: JMH's error is left out when it has none
		p["jmh_error"] = r.Error
	}
	if s, ok := r.Params["size"]; ok {
		p["size"], _ = strconv.Atoi(s)
	}
	return p
}

func recordField(env *lab.Env, rs []peers.JMHResult, run peers.JMHRun) {
	samples := map[string][]float64{}
	for _, r := range rs {
		size, err := strconv.Atoi(r.Params["size"])
		if err != nil || r.Unit != "ns/op" {
			continue
		}
		for _, o := range fieldOps {
			impl := map[string]string{o.ward: "ward-java", o.raw: "jdk"}[r.Benchmark]
			if impl == "" {
				continue
			}
			res := lab.FromSamples("jvm", fieldCase(impl, o.op, size), jmhParams(run, r), "time", "ns/op", r.Samples)
			res.Source, res.Note = lab.SourcePeer, "JMH average time per op, each measured iteration a sample"
			env.Record(res)
			samples[fieldCase(impl, o.op, size)] = r.Samples
		}
	}
	for _, o := range fieldOps {
		for _, size := range Sizes {
			w, j := samples[fieldCase("ward-java", o.op, size)], samples[fieldCase("jdk", o.op, size)]
			if len(w) > 0 && len(j) > 0 {
				env.Record(lab.CrossRatio("jvm", fieldRatio(o.op, size), map[string]any{"op": o.op, "size": size}, "ratio", w, j,
					"ward-java's time over the JDK's AES-GCM, JMH iterations of separate forks"))
			}
		}
	}
}

func recordPassword(env *lab.Env, rs []peers.JMHResult, run peers.JMHRun) {
	samples := map[string][]float64{}
	for _, r := range rs {
		if r.Unit != "ms/op" {
			continue
		}
		res := lab.FromSamples("jvm", passwordCase(r.Benchmark), jmhParams(run, r), "hash_latency", "ms", r.Samples)
		res.Source, res.Note = lab.SourcePeer, "JMH average time per op, each measured iteration a sample"
		env.Record(res)
		samples[r.Benchmark] = r.Samples
	}
	if w, s := samples["wardEncodeSpringParams"], samples["springEncode"]; len(w) > 0 && len(s) > 0 {
		env.Record(lab.CrossRatio("jvm", passwordRatio, map[string]any{"params": "argon2id m=16384,t=2,p=1"}, "ratio", w, s,
			"ward-java's encoder over Spring's at Spring's parameters, JMH iterations of separate forks"))
	}
}
