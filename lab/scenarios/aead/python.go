package aeadlab

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/peers"
)

// pythonSizes are the sizes the Python package is measured at: a short
// value, the chat message, a page.
var pythonSizes = []int{64, 500, 4096}

// implPython names the Python package's cases.
const implPython = "python-field"

func pythonCase(op string, size int) string {
	return fmt.Sprintf("%s/%s/%s", implPython, op, sizeName(size))
}

func pythonRaw(op string, size int) string {
	return fmt.Sprintf("python-raw/%s/%s", op, sizeName(size))
}

func pythonVsGo(op string, size int) string {
	return fmt.Sprintf("ratio/python-vs-go/%s/%s", op, sizeName(size))
}

func pythonOverhead(op string, size int) string {
	return fmt.Sprintf("ratio/python-field-overhead/%s/%s", op, sizeName(size))
}

// pythonRawStored and pythonOverheadStored are raw AES-GCM as the Go lab
// measures it: a value that carries its nonce.
func pythonRawStored(op string, size int) string {
	return fmt.Sprintf("python-raw-stored/%s/%s", op, sizeName(size))
}

func pythonOverheadStored(op string, size int) string {
	return fmt.Sprintf("ratio/python-field-overhead-stored/%s/%s", op, sizeName(size))
}

// pythonPeer measures the ward Python package's seal and open (ciphertext
// v4, AES-256-GCM) beside raw AES-GCM from the same cryptography package,
// and sets it beside Go's field layer of this run (goNs: ns per value per
// round of the v4 cases, by size and op).
func pythonPeer(ctx context.Context, env *lab.Env, goNs map[caseKey][]float64) {
	pr, krPath, mkPath, done, err := peerKeyring(ctx)
	if err != nil {
		env.Record(lab.Unavailable("aead", implPython, lab.SourcePeer, err))
		return
	}
	defer done()
	perRound := 2000
	if env.Quick {
		perRound = 500
	}
	for _, size := range pythonSizes {
		fmt.Fprintf(env.Log, "aead: the Python package at %s\n", sizeLabel(size))
		got, err := pr.WardPython(ctx, krPath, mkPath, size, env.Sampling.Samples, perRound)
		if err != nil {
			env.Record(lab.Unavailable("aead", implPython, lab.SourcePeer, err))
			return
		}
		recordPython(env, got, goNs)
	}
}

// recordPython records one size's Python figures and their ratios.
func recordPython(env *lab.Env, got peers.PythonField, goNs map[caseKey][]float64) {
	for _, c := range []struct {
		op              string
		py, raw, stored []float64
	}{{"seal", got.SealNs, got.RawSealNs, got.RawStoredSealNs}, {"open", got.OpenNs, got.RawOpenNs, got.RawStoredOpenNs}} {
		p := map[string]any{"alg": got.Algorithm, "op": c.op, "size": got.Size, "impl": implPython, "version": got.Version}
		r := lab.FromSamples("aead", pythonCase(c.op, got.Size), p, "time", "ns/op", c.py)
		r.Note = "ward's Python package (python/, on cryptography and PyNaCl): ciphertext v4 of messages.body, one row, interleaved with raw AES-GCM in the same process"
		raw := lab.FromSamples("aead", pythonRaw(c.op, got.Size), map[string]any{"alg": got.Algorithm, "op": c.op, "size": got.Size, "impl": "python-raw"}, "time", "ns/op", c.raw)
		raw.Note = "cryptography's AESGCM with a fresh random nonce per value (os.urandom), the AEAD call alone: the nonce and the sealed bytes apart"
		env.Record(r, raw, lab.PairedRatio("aead", pythonOverhead(c.op, got.Size), p, "field_overhead", c.py, c.raw,
			"per-round ratio of the Python package's time to raw AESGCM's call alone in the same Python process"))
		if len(c.stored) > 0 {
			st := lab.FromSamples("aead", pythonRawStored(c.op, got.Size), map[string]any{"alg": got.Algorithm, "op": c.op, "size": got.Size, "impl": "python-raw-stored"}, "time", "ns/op", c.stored)
			st.Note = "cryptography's AESGCM on a value that carries its nonce (seal returns nonce ‖ sealed, open splits it): raw AES-GCM as the Go lab's raw case and a column of it"
			env.Record(st, lab.PairedRatio("aead", pythonOverheadStored(c.op, got.Size), p, "field_overhead", c.py, c.stored,
				"per-round ratio of the Python package's time to raw AESGCM on a value that carries its nonce, same process"))
		}
		if c.op == "seal" {
			recordPythonSealParts(env, got, p)
		}
		if g := goNs[caseKey{keyring.AES256GCM, c.op, got.Size, implV4, "on"}]; len(g) > 0 {
			env.Record(lab.CrossRatio("aead", pythonVsGo(c.op, got.Size), p, "time_ratio", c.py, g,
				"the Python package's time per value over Go's field layer (ciphertext v4, AES-256-GCM), same machine, same run"))
		}
	}
}

// pythonPart names one part of the Python package's seal, measured alone
// or derived per round: "raw-ad" (raw AES-GCM on a value with its nonce and
// the seal's associated data), "check" (the context check), "rest" (the
// seal less both), "without-check" (the seal less its check, over raw with
// its nonce).
func pythonPart(part string, size int) string {
	return fmt.Sprintf("python-seal-part/%s/%s", part, sizeName(size))
}

// recordPythonSealParts records where one size's Python seal goes, when
// the peer measured its parts (an older peer does not).
func recordPythonSealParts(env *lab.Env, got peers.PythonField, p map[string]any) {
	if len(got.CheckNs) == 0 || len(got.RawStoredADSealNs) == 0 {
		return
	}
	rawAD := lab.FromSamples("aead", pythonPart("raw-ad", got.Size), p, "time", "ns/op", got.RawStoredADSealNs)
	rawAD.Note = "cryptography's AESGCM on a value that carries its nonce, with the seal's associated data (7 header bytes and the row's context)"
	check := lab.FromSamples("aead", pythonPart("check", got.Size), p, "time", "ns/op", got.CheckNs)
	check.Note = "the context check alone, as the package's seal computes it: an AES block of the check key (a kept ECB encryptor), CRC-32C of the context, the masking"
	noCheck := minus(got.SealNs, got.CheckNs) // per round: the seal less its check
	rest := lab.FromSamples("aead", pythonPart("rest", got.Size), p, "rest_ns", "ns", minus(noCheck, got.RawStoredADSealNs))
	rest.Note = "per round: the package's seal less raw AES-GCM with the seal's associated data and less the check: the interpreter's work of the layer (the call, the context, the value's assembly)"
	env.Record(rawAD, check, rest, lab.PairedRatio("aead", pythonPart("without-check", got.Size), p, "without_check", noCheck, got.RawStoredSealNs,
		"per round: the package's seal less its context check, over raw AES-GCM on a value that carries its nonce (what the layer would cost without the check)"))
}

// pythonPartsTable says where a Python seal's time goes, size by size.
func pythonPartsTable(rs lab.Results) (lab.Table, bool) {
	t := lab.Table{Caption: "Where a Python seal's time goes: the package's seal, raw AES-GCM on a value with its nonce (without and with the seal's associated data), the context check alone, the rest (per-round differences), and the seal without its check over raw, medians with p05–p95",
		Head: []string{"size", "seal", "raw with its nonce", "raw with nonce and AD", "the check", "the rest", "without the check, over raw"}}
	for _, size := range pythonSizes {
		check, ok := rs.Get(pythonPart("check", size), "time")
		if !ok {
			continue
		}
		seal, _ := rs.Get(pythonCase("seal", size), "time")
		raw, _ := rs.Get(pythonRawStored("seal", size), "time")
		rawAD, _ := rs.Get(pythonPart("raw-ad", size), "time")
		rest, _ := rs.Get(pythonPart("rest", size), "rest_ns")
		without, _ := rs.Get(pythonPart("without-check", size), "without_check")
		t.Rows = append(t.Rows, []string{sizeLabel(size), micros(seal), micros(raw), micros(rawAD), micros(check), micros(rest), times(without)})
	}
	return t, len(t.Rows) > 0
}

// pythonTable sets the Python package beside Go per value.
func pythonTable(rs lab.Results) (lab.Table, bool) {
	t := lab.Table{Caption: "ward in Python (python/): per value, ciphertext v4 AES-256-GCM, beside Go's field layer and Python's raw AES-GCM, medians with p05–p95",
		Head: []string{"op", "size", "Python", "Go (field layer)", "Python / Go", "Python raw AESGCM", "Python layer overhead", "over raw with its nonce"}}
	found := false
	for _, op := range []string{"seal", "open"} {
		for _, size := range pythonSizes {
			py, ok := rs.Get(pythonCase(op, size), "time")
			if !ok {
				continue
			}
			found = true
			goT, _ := rs.Get(caseKey{keyring.AES256GCM, op, size, implV4, "on"}.name(), "time")
			ratio, _ := rs.Get(pythonVsGo(op, size), "time_ratio")
			raw, _ := rs.Get(pythonRaw(op, size), "time")
			ov, _ := rs.Get(pythonOverhead(op, size), "field_overhead")
			ovs, _ := rs.Get(pythonOverheadStored(op, size), "field_overhead")
			t.Rows = append(t.Rows, []string{op, sizeLabel(size), micros(py), micros(goT), lab.FormatNumber(ratio.Median) + "x (" + ratio.Spread() + ")", micros(raw), percent(ov), times(ovs)})
		}
	}
	return t, found
}

// times prints a ratio with its spread ("2.1x (2.0–2.2)"), or "–".
func times(r lab.Result) string {
	if r.N == 0 {
		return "–"
	}
	return lab.FormatNumber(r.Median) + "x (" + r.Spread() + ")"
}

// micros prints a time per value in µs with its spread.
func micros(r lab.Result) string {
	if r.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s µs (%s to %s)", lab.FormatNumber(r.Median/1e3), lab.FormatNumber(r.P05/1e3), lab.FormatNumber(r.P95/1e3))
}

// pythonAnswer says what a Python reader pays per chat message.
func pythonAnswer(rs lab.Results) (string, bool) {
	op, okO := rs.Get(pythonCase("open", 500), "time")
	seal, okS := rs.Get(pythonCase("seal", 500), "time")
	if !okO || !okS {
		return "", false
	}
	ro, _ := rs.Get(pythonVsGo("open", 500), "time_ratio")
	ov, _ := rs.Get(pythonOverhead("open", 500), "field_overhead")
	return fmt.Sprintf("ward's Python package opens a 500-byte message in %s µs (p05–p95 %s to %s), %sx Go's field layer in the same run, and seals one in %s µs; over Python's own raw AES-GCM its layer adds %s per open.",
		lab.FormatNumber(op.Median/1e3), lab.FormatNumber(op.P05/1e3), lab.FormatNumber(op.P95/1e3), lab.FormatNumber(ro.Median),
		lab.FormatNumber(seal.Median/1e3), percent(ov)), true
}
