package aeadlab

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
)

// jvmKey names the JVM peer's case: the report's own stack, AES-128-GCM
// through javax.crypto, at one size with one intrinsics setting.
type jvmKey struct {
	mode peers.JVMIntrinsics
	size int
}

func (k jvmKey) name() string {
	return fmt.Sprintf("java-aes-gcm/AES-128-GCM/seal/%s/intrinsics-%v", sizeName(k.size), k.mode)
}

// jvmSpeedup names the JVM's speed-up from its intrinsics (on over mode).
func jvmSpeedup(mode peers.JVMIntrinsics, size int) string {
	return fmt.Sprintf("java-aes-gcm/AES-128-GCM/seal/%s/speedup-vs-%v", sizeName(size), mode)
}

// wardVsJVM names ward's throughput over the JVM's, both with hardware AES.
func wardVsJVM(size int) string {
	return fmt.Sprintf("ward-vs-java/AES-128-GCM/seal/%s", sizeName(size))
}

var jvmModes = []peers.JVMIntrinsics{peers.IntrinsicsOn, peers.AESIntrinsicsOff, peers.AllIntrinsicsOff}

// jvmPeer runs the report's AES-GCM benchmark in the JVM at the scenario's
// sizes, with intrinsics on, off as the report switched them, and fully
// off, and sets it beside ward's seal throughput of this run (MB/s per
// round, keyed by size).
func jvmPeer(ctx context.Context, env *lab.Env, ward map[int][]float64) {
	pr, err := peers.New()
	if err != nil {
		env.Record(lab.Unavailable("aead", "java-aes-gcm", lab.SourcePeer, err))
		return
	}
	defer pr.Close()
	perRound, warm := 16<<20, 3000
	if env.Quick {
		perRound, warm = 4<<20, 1000
	}
	var sizes [][2]int
	for _, s := range Sizes {
		sizes = append(sizes, [2]int{s, max(1, perRound/s)})
	}
	got := map[jvmKey][]float64{}
	for _, m := range jvmModes {
		fmt.Fprintf(env.Log, "aead: the report's Java AES-GCM, intrinsics %v\n", m)
		rounds, err := pr.AESGCM(ctx, m, env.Sampling.Samples, warm, sizes)
		if err != nil {
			env.Record(lab.Unavailable("aead", "java-aes-gcm", lab.SourcePeer, err))
			return
		}
		for _, r := range rounds {
			k := jvmKey{m, r.Size}
			got[k] = r.MBps
			res := lab.FromSamples("aead", k.name(), map[string]any{"alg": "AES-128-GCM", "op": "seal", "size": r.Size, "impl": "java", "intrinsics": m.String()},
				"throughput", "MB/s", r.MBps)
			res.Source, res.Note = lab.SourcePeer, "the report's stack here: javax.crypto AES/GCM/NoPadding, fresh IV per encryption, warmed up until steady"
			env.Record(res)
		}
	}
	for _, s := range Sizes {
		on := got[jvmKey{peers.IntrinsicsOn, s}]
		for _, m := range jvmModes[1:] {
			r := lab.CrossRatio("aead", jvmSpeedup(m, s), map[string]any{"size": s, "intrinsics": m.String()}, "hw_speedup", on, got[jvmKey{m, s}],
				"JVM throughput with intrinsics over without (two JVMs: pairs of rounds)")
			r.Source = lab.SourcePeer
			env.Record(r)
		}
		if w := ward[s]; len(w) > 0 {
			env.Record(lab.CrossRatio("aead", wardVsJVM(s), map[string]any{"size": s}, "throughput_ratio", w, on,
				"ward's raw AES-128-GCM seal throughput over the JVM's, both with hardware AES, same machine, same run"))
		}
	}
}

// sameMachine are the section's lines setting the JVM beside ward.
func sameMachine(rs lab.Results) []string {
	var out []string
	for _, s := range Sizes {
		on, ok := rs.Get(jvmKey{peers.IntrinsicsOn, s}.name(), "throughput")
		if !ok {
			continue
		}
		aes, _ := rs.Get(jvmSpeedup(peers.AESIntrinsicsOff, s), "hw_speedup")
		all, _ := rs.Get(jvmSpeedup(peers.AllIntrinsicsOff, s), "hw_speedup")
		hw, _ := rs.Get(ratioKey{keyring.AES128GCM, "seal", s}.hwSpeedup(), "hw_speedup")
		wv, _ := rs.Get(wardVsJVM(s), "throughput_ratio")
		out = append(out, fmt.Sprintf("%s: the report's Java AES-GCM %s MB/s with intrinsics; switching off AES intrinsics as the report did costs %sx (p05–p95 %s), all of them %sx (%s); ward's hardware AES is worth %sx (%s); ward seals %sx the JVM's throughput (p05–p95 %s).",
			sizeLabel(s), lab.FormatNumber(on.Median), lab.FormatNumber(aes.Median), aes.Spread(), lab.FormatNumber(all.Median), all.Spread(),
			lab.FormatNumber(hw.Median), hw.Spread(), lab.FormatNumber(wv.Median), wv.Spread()))
	}
	return out
}
