// Package passwordlab is the lab scenario "password", which reproduces seed
// 001: per-hash latency of Argon2id at the seed's and OWASP's parameters
// and of the legacy schemes, sign-up bursts of 1, 2 and 10 concurrent
// hashes with and without ward's limiter, and the reference C
// implementation (Debian's argon2 CLI) when the machine has it.
package passwordlab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/password"
)

// Scenario is the "password" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "password".
func (Scenario) Name() string { return "password" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 001: Argon2id/bcrypt/scrypt/PBKDF2 latency, 1/2/10 concurrent sign-ups with and without the limiter"
}

type config struct {
	name   string
	params password.Params
}

// Configs are the single-hash cases.
var Configs = []config{
	{"argon2id-seed", password.SpringV58},
	{"argon2id-owasp", password.OWASP},
	{"bcrypt-10", password.Params{Scheme: password.Bcrypt, Cost: 10}},
	{"bcrypt-12", password.Bcrypt12},
	{"scrypt-17", password.Scrypt17},
	{"pbkdf2-sha256-600k", password.PBKDF2SHA256OWASP},
}

// Bursts are the concurrent sign-up sizes; 10 is the seed's.
var Bursts = []int{1, 2, 10}

func paramsOf(p password.Params) map[string]any {
	m := map[string]any{"scheme": p.Scheme.String(), "params": p.String()}
	return m
}

// Run measures everything and records the seed's figures beside it.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	reps, bursts := 30, 10
	if env.Quick {
		reps, bursts = 5, 3
	}
	steps := len(Configs) + 2*len(Bursts) + 1
	step := 0
	next := func() { step++; env.Progress(step, steps) }

	single := map[string]float64{}
	for _, c := range Configs {
		h, err := password.NewHasher(password.Policy{Preferred: c.params, AllowWeak: true}, password.NewLimiter(password.LimiterConfig{}))
		if err != nil {
			return err
		}
		var ms []float64
		for range reps + 1 { // one warm-up
			start := time.Now()
			if _, err := h.Hash(ctx, []byte("correct horse battery staple")); err != nil {
				return err
			}
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
		ms = ms[1:]
		r := lab.FromSamples("password", c.name, paramsOf(c.params), "hash_latency", "ms", ms)
		single[c.name] = r.Median
		env.Record(r)
		next()
	}

	// Sign-up bursts at the seed's parameters.
	base := single["argon2id-seed"]
	for _, limited := range []bool{false, true} {
		for _, n := range Bursts {
			if err := burst(ctx, env, n, bursts, limited, base); err != nil {
				return err
			}
			next()
		}
	}

	if err := reference(ctx, env, reps, single["argon2id-seed"]); err != nil {
		fmt.Fprintf(env.Log, "password: reference argon2 CLI: %v\n", err)
	}
	if err := libsodium(ctx, env, reps, single["argon2id-seed"]); err != nil {
		fmt.Fprintf(env.Log, "password: libsodium reference: %v\n", err)
	}
	next()

	seed := func(cas, metric, unit string, v float64, note string) lab.Result {
		return lab.Quote("password", cas, map[string]any{"scheme": "argon2id", "params": "argon2id m=16384,t=2,p=1"}, metric, unit, v, "seed", note)
	}
	env.Record(
		seed("seed/spring-argon2-v5.8", "hash_latency", "ms", 450, "seed 001: Spring Security Argon2PasswordEncoder v5.8 defaults (BouncyCastle), Intel i5-1240P, Windows 11"),
		seed("seed/rust-jni-argon2", "hash_latency", "ms", 170, "seed 001: Rust argon2 crate via JNI, Argon2Encoder(16384, 2, 1), same machine"),
		seed("seed/spring-10-concurrent", "burst_time", "ms", 4500, "seed 001: '10 concurrent sign-ups take 4.5 s' with the Spring encoder"),
	)
	return nil
}

// burst runs rounds of n concurrent hashes and records the round time, the
// per-request latency, throughput and the peak heap.
func burst(ctx context.Context, env *lab.Env, n, rounds int, limited bool, single float64) error {
	mode := "unlimited"
	var lim *password.Limiter
	if limited {
		mode = "limiter"
		lim = password.NewLimiter(password.LimiterConfig{MaxInFlight: runtime.NumCPU()})
	} else {
		// Unlimited: every sign-up runs at once, as goroutines would.
		lim = password.NewLimiter(password.LimiterConfig{MaxInFlight: 1 << 20, MemoryBudget: 1 << 40, MaxQueue: 1 << 20})
	}
	h, err := password.NewHasher(password.Policy{Preferred: password.SpringV58, AllowWeak: true}, lim)
	if err != nil {
		return err
	}
	var totals, lats []float64
	var peak uint64
	// One warm-up round, so that bursts run in the same steady state as the
	// single-hash loop (pages already faulted in), then the timed rounds.
	runtime.GC()
	for i := 0; i <= rounds; i++ {
		if i == 1 {
			totals, lats = totals[:0], lats[:0]
		}
		stop := watchHeap(&peak)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		start := time.Now()
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				_, err := h.Hash(ctx, []byte("correct horse battery staple"))
				d := float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				lats = append(lats, d)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		totals = append(totals, float64(time.Since(start).Microseconds())/1000)
		stop()
		if firstErr != nil {
			return firstErr
		}
	}
	cas := fmt.Sprintf("signup-burst-%d/%s", n, mode)
	p := map[string]any{"scheme": "argon2id", "params": password.SpringV58.String(), "concurrent": n, "mode": mode, "cores": runtime.NumCPU()}
	tot := lab.FromSamples("password", cas, p, "burst_time", "ms", totals)
	lat := lab.FromSamples("password", cas, p, "request_latency", "ms", lats)
	thr := make([]float64, len(totals))
	for i, t := range totals {
		thr[i] = float64(n) / (t / 1000)
	}
	env.Record(tot, lat, lab.FromSamples("password", cas, p, "throughput", "hashes/s", thr),
		lab.Derived("password", cas, p, "peak_heap", "MiB", float64(peak)/(1<<20), "largest heap (objects) seen during any round, sampled every millisecond"))
	if single > 0 {
		ideal := math.Ceil(float64(n)/float64(runtime.NumCPU())) * single
		env.Record(lab.Derived("password", cas, p, "burst_vs_ideal", "x", tot.Median/ideal, "median burst time / (ceil(n/cores) x median single-hash time)"))
	}
	return nil
}

// watchHeap samples the heap every millisecond into peak until stopped.
func watchHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var p atomic.Uint64
	p.Store(*peak)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > p.Load() {
				p.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait(); *peak = p.Load() }
}

// reference times Debian's argon2 CLI (the reference C implementation) at
// the seed's parameters. Each run is a process, so a run at the smallest
// parameters is timed too and its median subtracted.
func reference(ctx context.Context, env *lab.Env, reps int, ward float64) error {
	bin, err := exec.LookPath("argon2")
	if err != nil {
		return fmt.Errorf("not installed (Debian package argon2); skipped")
	}
	run := func(args ...string) ([]float64, error) {
		var ms []float64
		for range reps + 1 {
			cmd := exec.CommandContext(ctx, bin, append([]string{"saltsaltsalt1234"}, args...)...)
			cmd.Stdin = strings.NewReader("correct horse battery staple")
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("%v: %s", err, out)
			}
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
		return ms[1:], nil
	}
	full, err := run("-id", "-t", "2", "-k", "16384", "-p", "1", "-l", "32", "-r")
	if err != nil {
		return err
	}
	empty, err := run("-id", "-t", "1", "-k", "8", "-p", "1", "-l", "32", "-r")
	if err != nil {
		return err
	}
	_, emptyMed, _, _ := lab.Summary(empty)
	net := slices.Clone(full)
	for i := range net {
		net[i] -= emptyMed
	}
	recordReference(env, "argon2-cli", "phc-winner-argon2 CLI", "ward-vs-reference",
		"Debian's argon2 CLI (reference C implementation), process start-up subtracted (median of a run at m=8 KiB, t=1)", net, ward)
	return nil
}

// recordReference records an external implementation's latency at the
// seed's parameters, and ward's median over it.
func recordReference(env *lab.Env, name, impl, ratioCase, note string, ms []float64, ward float64) {
	p := map[string]any{"scheme": "argon2id", "params": password.SpringV58.String(), "impl": impl}
	r := lab.FromSamples("password", "reference/"+name+"-seed", p, "hash_latency", "ms", ms)
	r.Source, r.Note = "reference", note
	env.Record(r)
	if ward > 0 && r.Median > 0 {
		env.Record(lab.Derived("password", ratioCase+"/argon2id-seed", p, "ratio", "x", ward/r.Median,
			"ward (x/crypto) median / "+impl+" median, same machine, same run"))
	}
}

// libsodiumScript times crypto_pwhash (Argon2id, optimised C) in-process
// through PyNaCl and prints the milliseconds as JSON.
const libsodiumScript = `
import json, sys, time
import nacl.pwhash
n = int(sys.argv[1])
ms = []
for i in range(n + 1):
    t = time.perf_counter()
    nacl.pwhash.argon2id.kdf(32, b"correct horse battery staple", b"saltsaltsalt1234", opslimit=2, memlimit=16384 * 1024)
    ms.append((time.perf_counter() - t) * 1000)
print(json.dumps(ms[1:]))
`

// libsodium measures libsodium's Argon2id at the seed's parameters, when
// Debian's python3-nacl is installed.
func libsodium(ctx context.Context, env *lab.Env, reps int, ward float64) error {
	py, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("no python3; skipped")
	}
	for _, cand := range []string{"/usr/bin/python3", py} {
		out, err := exec.CommandContext(ctx, cand, "-c", libsodiumScript, fmt.Sprint(reps)).Output()
		if err != nil {
			continue
		}
		var ms []float64
		if err := json.Unmarshal(out, &ms); err != nil || len(ms) == 0 {
			return fmt.Errorf("unexpected output from PyNaCl")
		}
		recordReference(env, "libsodium", "libsodium (PyNaCl)", "ward-vs-libsodium",
			"libsodium crypto_pwhash Argon2id (optimised C), timed in-process through PyNaCl", ms, ward)
		return nil
	}
	return fmt.Errorf("python3-nacl not installed (Debian package python3-nacl); skipped")
}
