package passwordlab

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
	"github.com/wardlab/ward/password"
)

// Bursts are the concurrent sign-up sizes; 10 is the field report's.
var Bursts = []int{1, 2, 10}

// burstKey names a burst case.
type burstKey struct {
	n    int
	mode string // unlimited or limiter
}

func (k burstKey) name() string { return fmt.Sprintf("signup-burst-%d/%s", k.n, k.mode) }

func (k burstKey) params() map[string]any {
	return map[string]any{"scheme": "argon2id", "params": password.SpringV58().String(), "concurrent": k.n, "mode": k.mode, "cores": runtime.NumCPU()}
}

// bursts runs, for one mode, rounds of sign-up bursts of every size (1, 2
// and 10 concurrent hashes at the report's parameters) and records each
// size's round time, per-request latency, peak resident memory, and round
// time over the ideal: ceil(n/cores) times the same round's single sign-up.
func bursts(ctx context.Context, env *lab.Env, limited bool) error {
	mode := "unlimited"
	lim := password.NewLimiter(password.LimiterConfig{MaxInFlight: 1 << 20, MemoryBudget: 1 << 40, MaxQueue: 1 << 20})
	if limited {
		mode = "limiter"
		lim = password.NewLimiter(password.LimiterConfig{MaxInFlight: runtime.NumCPU()})
	}
	h, err := password.NewHasher(password.Policy{Preferred: password.SpringV58(), AllowWeak: true}, lim)
	if err != nil {
		return err
	}
	totals, lats := map[int][]float64{}, map[int][]float64{}
	resetPeakRSS()
	for i := 0; i <= rounds(env); i++ { // round 0 warms up
		for _, n := range Bursts {
			t, l, err := burstRound(ctx, h, n)
			if err != nil {
				return err
			}
			if i > 0 {
				totals[n], lats[n] = append(totals[n], t), append(lats[n], l...)
			}
		}
	}
	rss := peakRSS()
	for _, n := range Bursts {
		k := burstKey{n, mode}
		p := k.params()
		env.Record(lab.FromSamples("password", k.name(), p, "burst_time", "ms", totals[n]),
			lab.FromSamples("password", k.name(), p, "request_latency", "ms", lats[n]))
		if rss > 0 {
			env.Record(lab.Derived("password", k.name(), p, "peak_rss", "MiB", rss, "the process's peak resident memory during this mode's rounds (VmHWM, reset after a GC)"))
		}
		ideal := make([]float64, len(totals[1]))
		for i, s := range totals[1] {
			ideal[i] = math.Ceil(float64(n)/float64(runtime.NumCPU())) * s
		}
		env.Record(lab.PairedRatio("password", k.name(), p, "burst_vs_ideal", totals[n], ideal,
			"burst time over ceil(n/cores) times the same round's single sign-up"))
	}
	return nil
}

// burstRound runs n hashes at once and returns the round's time and each
// request's latency, in ms.
func burstRound(ctx context.Context, h *password.Hasher, n int) (float64, []float64, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lats []float64
	var firstErr error
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := timeOne(func() error { _, err := h.Hash(ctx, []byte("correct horse battery staple")); return err })
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, d.ms) // elapsed: what a request waits
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / 1e6, lats, firstErr
}

// resetPeakRSS returns free memory to the system and resets the kernel's
// record of peak resident memory (Linux: /proc/self/clear_refs); peakRSS
// reads it (VmHWM) in MiB, or 0.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func peakRSS() float64 { return procStatus("VmHWM:") }

// currentRSS is the resident memory now, in MiB.
func currentRSS() float64 { return procStatus("VmRSS:") }

func procStatus(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// legacyCase times the non-Argon2 schemes through the Hasher.
func legacyCase(ctx context.Context, env *lab.Env, name string, p password.Params) error {
	h, err := password.NewHasher(password.Policy{Preferred: p, AllowWeak: true}, password.NewLimiter(password.LimiterConfig{}))
	if err != nil {
		return err
	}
	n := 10
	if env.Quick {
		n = 5
	}
	var ms []float64
	for i := 0; i <= n; i++ { // one warm-up
		d, err := timeOne(func() error { _, err := h.Hash(ctx, []byte("correct horse battery staple")); return err })
		if err != nil {
			return err
		}
		if i > 0 {
			ms = append(ms, d.ms)
		}
	}
	env.Record(lab.FromSamples("password", name, map[string]any{"scheme": p.Scheme.String(), "params": p.String()}, "hash_latency", "ms", ms))
	return nil
}

// JVM cases: the field report's own stack on this machine.
const (
	jvmCold   = "jvm-bouncycastle/cold"
	jvmWarm   = "jvm-bouncycastle/warm"
	jvmBurst  = "jvm-bouncycastle/10-concurrent"
	jvmVsWard = "jvm-bouncycastle/warm-vs-ward"
)

// jvm runs BouncyCastle's Argon2 (Spring Security's engine) in fresh JVMs:
// the first hash of each (cold), then warm hashes and 10 concurrent
// sign-ups, beside ward's figures of this run.
func jvm(ctx context.Context, env *lab.Env, pr *peers.Runner, ward []float64) {
	jvms, warm := 5, 10
	if env.Quick {
		jvms, warm = 2, 5
	}
	var cold, warmMS, burstMS []float64
	for range jvms {
		r, err := pr.Argon2BouncyCastle(ctx, warm, 2)
		if err != nil {
			env.Record(lab.Unavailable("password", "jvm-bouncycastle", lab.SourcePeer, err))
			return
		}
		cold, warmMS, burstMS = append(cold, r.FirstMS), append(warmMS, r.WarmMS...), append(burstMS, r.Burst10MS...)
	}
	p := reportParams("jvm-bouncycastle")
	rec := func(cas, metric string, v []float64, note string) lab.Result {
		r := lab.FromSamples("password", cas, p, metric, "ms", v)
		r.Source, r.Note = lab.SourcePeer, note
		return r
	}
	env.Record(rec(jvmCold, "hash_latency", cold, "the first hash in a fresh JVM (BouncyCastle Argon2BytesGenerator, Spring Security's engine)"),
		rec(jvmWarm, "hash_latency", warmMS, "warm hashes in the same JVMs"),
		rec(jvmBurst, "burst_time", burstMS, "10 concurrent hashes on a thread pool, the report's sign-up burst"))
	env.Record(lab.CrossRatio("password", jvmVsWard, p, "ratio", warmMS, ward, "JVM BouncyCastle warm hash over ward's, same machine, same run"))
}

// The field report's stack itself: Spring Security's encoder and ward-java's.
const (
	springEncode     = "jvm-spring/encode"
	springMatches    = "jvm-spring/matches"
	springBurst      = "jvm-spring/10-concurrent"
	wardJavaSame     = "jvm-ward/encode-report-params"
	wardJavaOWASP    = "jvm-ward/encode-owasp"
	wardJavaLogin    = "jvm-ward/login-spring-hash"
	wardJavaBurst    = "jvm-ward/10-concurrent"
	wardJavaVsSpring = "jvm-ward/encode-vs-spring"
	wardJavaVsGo     = "jvm-ward/encode-vs-go-ward"
)

// springStack runs java/WardJavaPassword in fresh JVMs: Spring Security's
// Argon2PasswordEncoder at its v5.8 defaults beside ward-java's
// WardPasswordEncoder at the same parameters (the cost of ward's encoder
// on the team's own stack) and at ward's default preset (what adopting it
// costs per sign-up), and a log-in against a hash Spring wrote (ward's
// matches and upgradeEncoding), all interleaved in each JVM.
func springStack(ctx context.Context, env *lab.Env, pr *peers.Runner, ward []float64) {
	jvms, warm, rounds := 3, 10, 3
	if env.Quick {
		jvms, warm, rounds = 1, 4, 1
	}
	var all peers.JavaPassword
	for range jvms {
		r, err := pr.WardJavaPassword(ctx, warm, rounds)
		if err != nil {
			env.Record(lab.Unavailable("password", "jvm-ward", lab.SourcePeer, err))
			return
		}
		all.SpringEncode = append(all.SpringEncode, r.SpringEncode...)
		all.WardEncodeSame = append(all.WardEncodeSame, r.WardEncodeSame...)
		all.WardEncode = append(all.WardEncode, r.WardEncode...)
		all.SpringMatches = append(all.SpringMatches, r.SpringMatches...)
		all.WardMatchesSpring = append(all.WardMatchesSpring, r.WardMatchesSpring...)
		all.SpringBurst10 = append(all.SpringBurst10, r.SpringBurst10...)
		all.WardBurst10Same = append(all.WardBurst10Same, r.WardBurst10Same...)
	}
	rec := func(cas, impl string, params password.Params, metric string, v []float64, note string) lab.Result {
		p := map[string]any{"scheme": "argon2id", "params": params.String(), "impl": impl}
		r := lab.FromSamples("password", cas, p, metric, "ms", v)
		r.Source, r.Note = lab.SourcePeer, note
		return r
	}
	spring, owasp := password.SpringV58(), password.OWASP()
	env.Record(rec(springEncode, "jvm-spring", spring, "hash_latency", all.SpringEncode, "Spring Security's Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8().encode, warm"),
		rec(springMatches, "jvm-spring", spring, "hash_latency", all.SpringMatches, "Spring's matches on a hash it wrote"),
		rec(springBurst, "jvm-spring", spring, "burst_time", all.SpringBurst10, "10 concurrent Spring encodes on a thread pool"),
		rec(wardJavaSame, "jvm-ward", spring, "hash_latency", all.WardEncodeSame, "ward-java's WardPasswordEncoder at Spring's v5.8 parameters, interleaved with Spring's"),
		rec(wardJavaOWASP, "jvm-ward", owasp, "hash_latency", all.WardEncode, "ward-java's WardPasswordEncoder at ward's default preset"),
		rec(wardJavaLogin, "jvm-ward", spring, "hash_latency", all.WardMatchesSpring, "ward-java's matches and upgradeEncoding on a hash Spring's encoder wrote: a log-in before the upgrade"),
		rec(wardJavaBurst, "jvm-ward", spring, "burst_time", all.WardBurst10Same, "10 concurrent ward-java encodes at Spring's parameters"))
	p := reportParams("jvm-ward")
	env.Record(lab.PairedRatio("password", wardJavaVsSpring, p, "ratio", all.WardEncodeSame, all.SpringEncode,
		"ward-java's encoder over Spring's, same parameters, interleaved in one JVM"),
		lab.CrossRatio("password", wardJavaVsGo, p, "ratio", all.WardEncodeSame, ward,
			"ward-java's encoder over Go ward's hasher, same parameters, same machine, same run"))
}
