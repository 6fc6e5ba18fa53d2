package aeadlab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
)

// javaSizes are the sizes ward's JVM core is measured at: a short value,
// the chat message, a page, and 16 KiB.
var javaSizes = []int{64, 500, 4096, 16 << 10}

// implJava names the JVM core's cases.
const implJava = "java-field"

func javaCase(op string, size int) string {
	return fmt.Sprintf("%s/%s/%s", implJava, op, sizeName(size))
}

func javaRaw(op string, size int) string {
	return fmt.Sprintf("java-raw/%s/%s", op, sizeName(size))
}

func javaOverhead(op string, size int) string {
	return fmt.Sprintf("ratio/java-field-overhead/%s/%s", op, sizeName(size))
}

func javaVsGo(op string, size int) string {
	return fmt.Sprintf("ratio/java-vs-go/%s/%s", op, sizeName(size))
}

// javaFieldPeer measures ward's JVM core's seal and open (ciphertext v4,
// AES-256-GCM) beside raw JDK AES-GCM in one JVM, and sets it beside Go's
// field layer of this run (goNs, as for the Python package).
func javaFieldPeer(ctx context.Context, env *lab.Env, goNs map[caseKey][]float64) {
	pr, krPath, mkPath, done, err := peerKeyring(ctx)
	if err != nil {
		env.Record(lab.Unavailable("aead", implJava, lab.SourcePeer, err))
		return
	}
	defer done()
	perRound, warm := 20000, 3000
	if env.Quick {
		perRound, warm = 5000, 1000
	}
	for _, size := range javaSizes {
		fmt.Fprintf(env.Log, "aead: ward's JVM core at %s\n", sizeLabel(size))
		got, err := pr.WardJava(ctx, krPath, mkPath, size, env.Sampling.Samples, max(200, perRound*64/max(64, size)), warm)
		if err != nil {
			env.Record(lab.Unavailable("aead", implJava, lab.SourcePeer, err))
			return
		}
		recordJava(env, got, goNs)
	}
}

// recordJava records one size's JVM figures and their ratios.
func recordJava(env *lab.Env, got peers.JavaField, goNs map[caseKey][]float64) {
	for _, c := range []struct {
		op      string
		jv, raw []float64
	}{{"seal", got.SealNs, got.RawSealNs}, {"open", got.OpenNs, got.RawOpenNs}} {
		p := map[string]any{"alg": got.Algorithm, "op": c.op, "size": got.Size, "impl": implJava}
		r := lab.FromSamples("aead", javaCase(c.op, got.Size), p, "time", "ns/op", c.jv)
		r.Note = "ward's JVM core (java/ward-core, the JDK and BouncyCastle): ciphertext v4 of messages.body, one row, interleaved with raw AES-GCM in the same JVM, thread CPU time after a warm-up"
		raw := lab.FromSamples("aead", javaRaw(c.op, got.Size), map[string]any{"alg": got.Algorithm, "op": c.op, "size": got.Size, "impl": "java-raw"}, "time", "ns/op", c.raw)
		raw.Note = "javax.crypto AES/GCM/NoPadding with a fresh SecureRandom IV on a value that carries its IV, as the Go lab's raw case"
		env.Record(r, raw, lab.PairedRatio("aead", javaOverhead(c.op, got.Size), p, "field_overhead", c.jv, c.raw,
			"per-round ratio of ward-java's time to raw JDK AES-GCM's in the same JVM"))
		if g := goNs[caseKey{keyring.AES256GCM, c.op, got.Size, implV4, "on"}]; len(g) > 0 {
			env.Record(lab.CrossRatio("aead", javaVsGo(c.op, got.Size), p, "time_ratio", c.jv, g,
				"ward-java's time per value over Go's field layer (ciphertext v4, AES-256-GCM), same machine, same run"))
		}
	}
}

// javaTable sets ward's JVM core beside raw JDK AES-GCM and Go per value.
func javaTable(rs lab.Results) (lab.Table, bool) {
	t := lab.Table{Caption: "ward on the JVM (java/ward-core): per value, ciphertext v4 AES-256-GCM, beside raw JDK AES-GCM on a value with its IV and Go's field layer, medians with p05–p95",
		Head: []string{"op", "size", "ward-java", "JDK raw AES-GCM", "over raw", "Go (field layer)", "ward-java / Go"}}
	found := false
	for _, op := range []string{"seal", "open"} {
		for _, size := range javaSizes {
			jv, ok := rs.Get(javaCase(op, size), "time")
			if !ok {
				continue
			}
			found = true
			raw, _ := rs.Get(javaRaw(op, size), "time")
			ov, _ := rs.Get(javaOverhead(op, size), "field_overhead")
			goT, _ := rs.Get(caseKey{keyring.AES256GCM, op, size, implV4, "on"}.name(), "time")
			ratio, _ := rs.Get(javaVsGo(op, size), "time_ratio")
			t.Rows = append(t.Rows, []string{op, sizeLabel(size), micros(jv), micros(raw), times(ov), micros(goT), times(ratio)})
		}
	}
	return t, found
}

// peerKeyring starts a peer runner and writes a new AES-256-GCM keyring
// and its master key to a temporary folder, for a peer in another
// language; done stops the runner and removes the folder.
func peerKeyring(ctx context.Context) (pr *peers.Runner, krPath, mkPath string, done func(), err error) {
	if pr, err = peers.New(); err != nil {
		return nil, "", "", nil, err
	}
	dir, err := os.MkdirTemp("", "ward-lab-peer-")
	if err != nil {
		pr.Close()
		return nil, "", "", nil, err
	}
	done = func() { pr.Close(); os.RemoveAll(dir) }
	mk := local.Generate()
	krPath, mkPath = filepath.Join(dir, "kr.json"), filepath.Join(dir, "mk.b64")
	_, err = keyring.Create(ctx, krPath, mk, keyring.AES256GCM)
	if err == nil {
		err = os.WriteFile(mkPath, []byte(mk.Encode()), 0o600)
	}
	if err != nil {
		done()
		return nil, "", "", nil, err
	}
	return pr, krPath, mkPath, done, nil
}
