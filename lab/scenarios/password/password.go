// Package passwordlab is the lab scenario "password", which reproduces the
// field report on a fast Argon2 password encoder: per-hash latency of
// Argon2id at the report's parameters, OWASP's and RFC 9106's second
// recommendation, through ward's own core and x/crypto/argon2 in
// interleaved rounds; the reference C implementation, the RustCrypto
// argon2 crate and libsodium in the same rounds (separate processes); the legacy schemes; sign-up bursts of
// 1, 2 and 10 with and without ward's limiter; and the report's own stack:
// BouncyCastle in the JVM, cold and warm, and Spring Security's
// Argon2PasswordEncoder beside ward-java's encoder in the same JVMs.
package passwordlab

import (
	"context"
	"fmt"
	"runtime"
	"time"

	xargon2 "golang.org/x/crypto/argon2"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
	"github.com/wardlab/ward/password"
)

// Scenario is the "password" lab scenario.
type Scenario struct{}

var _ lab.ChildScenario = Scenario{}

// Name returns "password".
func (Scenario) Name() string { return "password" }

// Title names the topic.
func (Scenario) Title() string { return "Password hashing" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does one password hash cost per scheme, how does ward's Argon2 core compare with the strongest implementations on this machine, and what happens to 10 concurrent sign-ups?"
}

// argon2Case is one Argon2id parameter set.
type argon2Case struct {
	name   string
	params password.Params
}

// argon2Cases are the field report's parameters (Spring Security v5.8's),
// OWASP's first option and RFC 9106's second recommendation.
var argon2Cases = []argon2Case{
	{"argon2id-report", password.SpringV58()},
	{"argon2id-owasp", password.OWASP()},
	{"argon2id-rfc9106", password.Strong()},
}

// implKey names an implementation measured at an Argon2 case.
type implKey struct {
	c    argon2Case
	impl string // ward, x-crypto, c-reference, libsodium
}

func (k implKey) name() string { return k.c.name + "/" + k.impl }

func (k implKey) params() map[string]any {
	return map[string]any{"scheme": "argon2id", "params": k.c.params.String(), "impl": k.impl,
		"m_kib": k.c.params.Memory, "t": k.c.params.Time, "p": k.c.params.Parallelism}
}

// vsKey names the ratio of ward to another implementation at a case.
func vsKey(c argon2Case, other string) string { return c.name + "/ward-vs-" + other }

// legacy are the other schemes, one hash per sample.
var legacy = []struct {
	name   string
	params password.Params
}{
	{"bcrypt-10", password.Params{Scheme: password.Bcrypt, Cost: 10}},
	{"bcrypt-12", password.Bcrypt12()},
	{"scrypt-17", password.Scrypt17()},
	{"pbkdf2-sha256-600k", password.PBKDF2SHA256OWASP()},
}

// fieldReport are the report's own figures, measured elsewhere (Intel
// i5-1240P, Windows 11).
var fieldReport = []lab.Result{
	lab.Quote("password", "field-report/spring-argon2-v5.8", reportParams("spring"), "hash_latency", "ms", 450, lab.SourceFieldReport,
		"Spring Security Argon2PasswordEncoder v5.8 defaults (BouncyCastle), Intel i5-1240P, Windows 11"),
	lab.Quote("password", "field-report/rust-jni-argon2", reportParams("rust-jni"), "hash_latency", "ms", 170, lab.SourceFieldReport,
		"Rust argon2 crate via JNI, Argon2Encoder(16384, 2, 1), same machine"),
	lab.Quote("password", "field-report/spring-10-concurrent", reportParams("spring"), "burst_time", "ms", 4500, lab.SourceFieldReport,
		"'10 concurrent sign-ups take 4.5 s' with the Spring encoder"),
}

func reportParams(impl string) map[string]any {
	return map[string]any{"scheme": "argon2id", "params": password.SpringV58().String(), "impl": impl}
}

// rounds returns the number of interleaved rounds for the profile.
func rounds(env *lab.Env) int {
	if env.Quick {
		return 11
	}
	return 31
}

// Run measures everything and records the report's figures beside it.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	pr, err := peers.New()
	if err != nil {
		return err
	}
	defer pr.Close()
	steps := len(argon2Cases) + len(legacy) + 2 + 2
	step := 0
	next := func() { step++; env.Progress(step, steps) }
	single := map[string][]float64{}
	for _, c := range argon2Cases {
		w, err := argon2Rounds(ctx, env, pr, c)
		if err != nil {
			return err
		}
		single[c.name] = w
		next()
	}
	for _, l := range legacy {
		if err := legacyCase(ctx, env, l.name, l.params); err != nil {
			return err
		}
		next()
	}
	for _, limited := range []bool{false, true} {
		if err := bursts(ctx, env, limited); err != nil {
			return err
		}
		next()
	}
	jvm(ctx, env, pr, single["argon2id-report"])
	next()
	springStack(ctx, env, pr, single["argon2id-report"])
	next()
	env.Record(fieldReport...)
	return nil
}

// argon2Rounds measures one parameter set: every round hashes once with
// ward (pooled memory), once with x/crypto (fresh memory), and, at one
// lane, runs the C reference, the Rust crate and libsodium (each a process
// hashing a few times), in alternating order. Each hash is timed on two
// clocks: elapsed time, what a user waits, and the process's CPU time, what
// the implementations are compared by (docs/LAB.md, "How the lab
// measures"). It records every implementation and ward's per-round ratio to
// each, and returns ward's elapsed samples (ms).
func argon2Rounds(ctx context.Context, env *lab.Env, pr *peers.Runner, c argon2Case) ([]float64, error) {
	h, err := password.NewHasher(password.Policy{Preferred: c.params, AllowWeak: true}, password.NewLimiter(password.LimiterConfig{MaxInFlight: 4}))
	if err != nil {
		return nil, err
	}
	pw := []byte("correct horse battery staple")
	salt := []byte("saltsaltsalt1234")
	impls := map[string]func() (timing, error){
		"ward": func() (timing, error) { return timeOne(func() error { _, err := h.Hash(ctx, pw); return err }) },
		"x-crypto": func() (timing, error) {
			return timeOne(func() error {
				xargon2.IDKey(pw, salt, c.params.Time, c.params.Memory, c.params.Parallelism, 32)
				return nil
			})
		},
	}
	order := []string{"ward", "x-crypto"}
	refLib := ""
	if c.params.Parallelism == 1 {
		order, refLib = references(ctx, env, pr, c, impls, order)
	}
	samples, err := interleaveHashes(ctx, env, impls, order)
	if err != nil {
		return nil, err
	}
	recordArgon2(env, c, order, samples, refLib)
	for _, impl := range []string{"c-reference", "libsodium"} {
		if mb := peakRSSSeen[implKey{c, impl}.name()]; mb > 0 {
			k := implKey{c, impl}
			env.Record(lab.Derived("password", k.name(), k.params(), "peak_rss", "MiB", mb, "peak resident memory of the peer's process"))
		}
	}
	for _, impl := range []string{"ward", "x-crypto"} {
		rs, err := env.RunChild(ctx, nil, "rss", impl, fmt.Sprint(c.params.Memory), fmt.Sprint(c.params.Time), fmt.Sprint(c.params.Parallelism))
		if err != nil {
			return nil, err
		}
		env.Record(rs...)
	}
	return samples["ward"].ms, nil
}

// timings are one implementation's hashes, on both clocks.
type timings struct{ ms, cpu []float64 }

// interleaveHashes warms every implementation up, then runs rounds in
// which each hashes once, in alternating order (A B C, then C B A): none
// always runs first, or always after another's garbage.
func interleaveHashes(ctx context.Context, env *lab.Env, impls map[string]func() (timing, error), order []string) (map[string]timings, error) {
	for _, name := range order { // warm-up: one of each, pages faulted in
		if _, err := impls[name](); err != nil {
			return nil, fmt.Errorf("password: %s: %w", name, err)
		}
	}
	samples := map[string]timings{}
	for round := range rounds(env) {
		for j := range order {
			name := order[j]
			if round%2 == 1 {
				name = order[len(order)-1-j]
			}
			// The garbage x/crypto leaves (its memory, per hash) is collected
			// outside the timings, so that no implementation pays for
			// another's.
			runtime.GC()
			t, err := impls[name]()
			if err != nil {
				return nil, fmt.Errorf("password: %s: %w", name, err)
			}
			s := samples[name]
			s.ms, s.cpu = append(s.ms, t.ms), append(s.cpu, t.cpu)
			samples[name] = s
		}
	}
	return samples, nil
}

// peakRSSSeen keeps the largest peak resident memory of each C peer's
// processes.
var peakRSSSeen = map[string]float64{}

// recordRSS records a C peer's peak resident memory once its rounds are
// over: the largest its processes reached.
func recordRSS(env *lab.Env, k implKey, mb float64) {
	if mb > peakRSSSeen[k.name()] {
		peakRSSSeen[k.name()] = mb
	}
}

// rssHashes is how many hashes a child process runs for its peak
// resident memory.
const rssHashes = 5

// RunChild measures, in a fresh process, the peak resident memory of
// rssHashes hashes of one implementation (args: "rss", impl, m, t, p).
func (Scenario) RunChild(ctx context.Context, env *lab.Env, args []string) error {
	if len(args) != 5 || args[0] != "rss" {
		return fmt.Errorf("password: child arguments %q", args)
	}
	var m, t, p uint64
	fmt.Sscan(args[2], &m)
	fmt.Sscan(args[3], &t)
	fmt.Sscan(args[4], &p)
	c := argon2Case{name: "child", params: password.Params{Scheme: password.Argon2id, Memory: uint32(m), Time: uint32(t), Parallelism: uint8(p), SaltLen: 16, KeyLen: 32}}
	for _, ac := range argon2Cases {
		if ac.params.Memory == c.params.Memory && ac.params.Time == c.params.Time && ac.params.Parallelism == c.params.Parallelism {
			c = ac
		}
	}
	base := currentRSS()
	resetPeakRSS()
	h, err := password.NewHasher(password.Policy{Preferred: c.params, AllowWeak: true}, password.NewLimiter(password.LimiterConfig{MaxInFlight: 4}))
	if err != nil {
		return err
	}
	for range rssHashes {
		if args[1] == "ward" {
			if _, err := h.Hash(ctx, []byte("pw")); err != nil {
				return err
			}
		} else {
			xargon2.IDKey([]byte("pw"), []byte("saltsaltsalt1234"), c.params.Time, c.params.Memory, c.params.Parallelism, 32)
		}
	}
	k := implKey{c, args[1]}
	env.Record(lab.Derived("password", k.name(), k.params(), "peak_rss", "MiB", peakRSS(),
		fmt.Sprintf("peak resident memory of a fresh process over %d hashes (%.0f MiB before hashing)", rssHashes, base)))
	return nil
}

// timing is one hash's elapsed and CPU milliseconds (a peer's: the
// medians of the hashes its process timed).
type timing struct{ ms, cpu float64 }

// timeOne times f in milliseconds: elapsed, and the process's CPU time
// (every thread: x/crypto hashes on goroutines of its own, and the
// collector reclaims its memory on others).
func timeOne(f func() error) (timing, error) {
	start, cpu := time.Now(), lab.ProcessCPU.Read()
	err := f()
	return timing{lab.Milliseconds(time.Since(start)), lab.Milliseconds(lab.ProcessCPU.Read() - cpu)}, err
}

func recordArgon2(env *lab.Env, c argon2Case, order []string, samples map[string]timings, refLib string) {
	for _, name := range order {
		k := implKey{c, name}
		p := k.params()
		env.Record(lab.FromSamples("password", k.name(), p, "hash_cpu", "ms", samples[name].cpu))
		r := lab.FromSamples("password", k.name(), p, "hash_latency", "ms", samples[name].ms)
		switch name {
		case "ward":
			p["simd"] = password.Argon2Implementation()
			r.Note = "ward's Argon2 core (" + password.Argon2Implementation() + ") through Hasher.Hash: limiter, pooled and zeroed block memory"
		case "x-crypto":
			r.Source, r.Note = lab.SourceReference, "golang.org/x/crypto/argon2.IDKey (SSE4.1 assembly, fresh memory per hash)"
		case "c-reference":
			r.Source, r.Note = lab.SourceReference, refLib+": argon2id_hash_raw in a separate process, which allocates and wipes per hash"
		case "libsodium":
			r.Source, r.Note = lab.SourceReference, "libsodium crypto_pwhash_argon2id through its C library, in a separate process"
		case "rust-argon2":
			r.Source, r.Note = lab.SourceReference, "the RustCrypto argon2 crate 0.6 (its AVX2 code where the CPU has it), Argon2::hash_password_into in a separate process, which allocates and frees per hash"
		}
		env.Record(r)
		if name != "ward" {
			env.Record(lab.PairedRatio("password", vsKey(c, name), p, "ratio", samples["ward"].cpu, samples[name].cpu,
				"ward's CPU time over "+name+"'s (the process's, every thread), per interleaved round"))
		}
	}
	env.Record(allocs(env, c))
}

// references adds the C reference, the Rust argon2 crate and libsodium to
// a case's rounds when the machine can build them; what is missing is
// recorded as such.
func references(ctx context.Context, env *lab.Env, pr *peers.Runner, c argon2Case, impls map[string]func() (timing, error), order []string) ([]string, string) {
	const perRound = 3 // hashes per process, median taken: start-up excluded
	m, t := c.params.Memory, c.params.Time
	var lib string
	if _, l, err := pr.Argon2C(ctx, 8, 1, 1, 1); err != nil {
		env.Record(lab.Unavailable("password", c.name+"/c-reference", lab.SourceReference, err))
	} else {
		lib = l
		impls["c-reference"] = func() (timing, error) {
			h, _, err := pr.Argon2C(ctx, m, t, 1, perRound)
			recordRSS(env, implKey{c, "c-reference"}, h.PeakRSSMB)
			return timing{median(h.MS), median(h.CPUMS)}, err
		}
		order = append(order, "c-reference")
	}
	if _, err := pr.Argon2Rust(ctx, 8, 1, 1, 1); err != nil {
		env.Record(lab.Unavailable("password", c.name+"/rust-argon2", lab.SourceReference, err))
	} else {
		impls["rust-argon2"] = func() (timing, error) {
			h, err := pr.Argon2Rust(ctx, m, t, 1, perRound)
			recordRSS(env, implKey{c, "rust-argon2"}, h.PeakRSSMB)
			return timing{median(h.MS), median(h.CPUMS)}, err
		}
		order = append(order, "rust-argon2")
	}
	if _, err := pr.Argon2Sodium(ctx, 8, 1, 1); err != nil {
		env.Record(lab.Unavailable("password", c.name+"/libsodium", lab.SourceReference, err))
	} else {
		impls["libsodium"] = func() (timing, error) {
			h, err := pr.Argon2Sodium(ctx, m, t, perRound)
			recordRSS(env, implKey{c, "libsodium"}, h.PeakRSSMB)
			return timing{median(h.MS), median(h.CPUMS)}, err
		}
		order = append(order, "libsodium")
	}
	return order, lib
}

func median(xs []float64) float64 {
	_, m, _, _ := lab.Summary(xs)
	return m
}

// missing records that a reference or peer could not run, and the command
// that brings it; the report shows it instead of a number.

// allocs measures one more ward hash of c for its allocations and the
// block memory the limiter keeps.
func allocs(env *lab.Env, c argon2Case) lab.Result {
	h, _ := password.NewHasher(password.Policy{Preferred: c.params, AllowWeak: true}, password.NewLimiter(password.LimiterConfig{MaxInFlight: 4}))
	ctx := context.Background()
	h.Hash(ctx, []byte("warm")) // the block memory is now in the pool
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 5
	for range n {
		h.Hash(ctx, []byte("steady state"))
	}
	runtime.ReadMemStats(&after)
	k := implKey{c, "ward"}
	r := lab.Derived("password", k.name(), k.params(), "bytes_allocated", "B/op", float64(after.TotalAlloc-before.TotalAlloc)/n,
		"heap bytes allocated per hash in steady state (block memory comes from the limiter's pool)")
	return r
}
