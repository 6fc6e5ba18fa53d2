package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/wardlab/ward/lab"
)

var aeadAlgs = []string{"AES-128-GCM", "AES-256-GCM", "XChaCha20-Poly1305"}

func sizeLabel(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

func aeadSection(ix index) (section, error) {
	s := section{Title: "Field encryption: AEAD cost (seed 000)",
		Question: "What does AES-GCM cost per value, with and without AES hardware, and what does ward's field layer add on top of raw crypto/cipher?"}
	tput := map[string]map[float64]float64{} // alg/impl/hw -> size -> MB/s
	sizes := map[float64]bool{}
	for _, r := range ix.where(func(r lab.Result) bool { return r.Metric == "throughput" && str(r.Params, "op") == "seal" }) {
		k := str(r.Params, "alg") + "|" + str(r.Params, "impl") + "|" + str(r.Params, "aes_hw")
		if tput[k] == nil {
			tput[k] = map[float64]float64{}
		}
		sz := num(r.Params, "size")
		tput[k][sz] = r.Median
		sizes[sz] = true
	}
	var sz []float64
	for v := range sizes {
		sz = append(sz, v)
	}
	sort.Float64s(sz)
	var ss []series
	for _, alg := range aeadAlgs {
		for _, v := range []struct{ impl, hw, label string }{{"raw", "on", "AES hardware on"}, {"raw", "off", "AES hardware off"}} {
			var pts plotter.XYs
			for _, x := range sz {
				if y, ok := tput[alg+"|"+v.impl+"|"+v.hw][x]; ok && y > 0 {
					pts = append(pts, plotter.XY{X: x, Y: y})
				}
			}
			ss = append(ss, series{name: alg + ", " + v.label, points: pts, dashed: v.hw == "off"})
		}
	}
	if len(sz) > 0 {
		c, err := lineChart("Seal throughput by value size", "value size (bytes)", "MB/s", true, true, ss)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
	}
	t := table{Caption: "Seal throughput, MB/s: raw crypto/cipher / ward field layer / raw with GODEBUG=cpu.aes=off",
		Head: append([]string{"algorithm"}, mapSizes(sz)...)}
	for _, alg := range aeadAlgs {
		row := []string{alg}
		for _, x := range sz {
			row = append(row, fmt.Sprintf("%s / %s / %s", fmtNum(tput[alg+"|raw|on"][x]), fmtNum(tput[alg+"|field|on"][x]), fmtNum(tput[alg+"|raw|off"][x])))
		}
		t.Rows = append(t.Rows, row)
	}
	s.Tables = append(s.Tables, t)

	ratios := table{Caption: "Hardware AES speed-up (time off / on) and field layer overhead, seal", Head: []string{"algorithm", "size", "hw speed-up", "field overhead"}}
	for _, alg := range aeadAlgs {
		for _, x := range sz {
			name := fmt.Sprintf("%s/seal/%s", alg, strings.ReplaceAll(sizeLabel(x), " ", ""))
			hw := ix.median(name+"/raw/aes-hw-speedup", "hw_speedup")
			ov := ix.median(name+"/field-overhead", "field_overhead")
			ratios.Rows = append(ratios.Rows, []string{alg, sizeLabel(x), fmtNum(hw) + "x", fmtNum(ov) + " %"})
		}
	}
	s.Tables = append(s.Tables, ratios)
	if len(sz) > 0 {
		big := sz[len(sz)-1]
		name := fmt.Sprintf("AES-256-GCM/seal/%s", strings.ReplaceAll(sizeLabel(big), " ", ""))
		s.Answer = append(s.Answer,
			fmt.Sprintf("Hardware AES makes AES-256-GCM %sx faster at %s here; XChaCha20-Poly1305, which needs no AES hardware, is the choice without it.",
				fmtNum(ix.median(name+"/raw/aes-hw-speedup", "hw_speedup")), sizeLabel(big)),
			fmt.Sprintf("ward's field layer (header, key ID, context binding) adds %s %% at 500 B and %s %% at %s.",
				fmtNum(ix.median("AES-256-GCM/seal/500B/field-overhead", "field_overhead")), fmtNum(ix.median(name+"/field-overhead", "field_overhead")), sizeLabel(big)))
	}
	var quotes []string
	for _, r := range ix.where(func(r lab.Result) bool { return r.Source == "seed" }) {
		quotes = append(quotes, fmt.Sprintf("%sx (%s)", fmtNum(r.Median), r.Note))
	}
	s.Seed = "Java AES-GCM with AES intrinsics on vs off: " + strings.Join(quotes, "; ")
	return s, nil
}

func mapSizes(sz []float64) []string {
	out := make([]string, len(sz))
	for i, x := range sz {
		out[i] = sizeLabel(x)
	}
	return out
}

func passwordSection(ix index) (section, error) {
	s := section{Title: "Password hashing (seed 001)",
		Question: "What does one password hash cost per scheme here, and what happens to 10 concurrent sign-ups with and without a limiter?"}
	lat := ix.where(func(r lab.Result) bool { return r.Metric == "hash_latency" })
	var labels []string
	vals := map[string][]float64{"median ms": nil}
	t := table{Caption: "Per-hash latency", Head: []string{"case", "parameters", "median ms", "p95 ms", "source"}}
	for _, r := range lat {
		src := r.Source
		if src == "" {
			src = "here"
		}
		labels = append(labels, r.Case)
		vals["median ms"] = append(vals["median ms"], r.Median)
		t.Rows = append(t.Rows, []string{r.Case, str(r.Params, "params"), fmtNum(r.Median), fmtNum(r.P95), src})
	}
	if len(labels) > 0 {
		c, err := barChart("Time per hash (seed bars measured elsewhere)", "ms", labels, []string{"median ms"}, vals)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
	}
	s.Tables = append(s.Tables, t)

	bt := table{Caption: "Sign-up bursts at the seed's parameters (Argon2id m=16384, t=2, p=1)",
		Head: []string{"concurrent", "mode", "burst median ms", "burst p95 ms", "request p95 ms", "peak heap MiB", "vs ideal"}}
	var blabels []string
	bvals := map[string][]float64{}
	for _, n := range []string{"1", "2", "10"} {
		blabels = append(blabels, n+" sign-ups")
		for _, mode := range []string{"unlimited", "limiter"} {
			cas := "signup-burst-" + n + "/" + mode
			b, ok := ix.get(cas, "burst_time")
			if !ok {
				continue
			}
			rl, _ := ix.get(cas, "request_latency")
			bt.Rows = append(bt.Rows, []string{n, mode, fmtNum(b.Median), fmtNum(b.P95), fmtNum(rl.P95),
				fmtNum(ix.median(cas, "peak_heap")), fmtNum(ix.median(cas, "burst_vs_ideal")) + "x"})
			bvals["burst p95, "+mode] = append(bvals["burst p95, "+mode], b.P95)
			bvals["request p95, "+mode] = append(bvals["request p95, "+mode], rl.P95)
		}
	}
	if len(bt.Rows) > 0 {
		c, err := barChart("Sign-up bursts: tail latency with and without the limiter", "ms", blabels,
			[]string{"burst p95, unlimited", "burst p95, limiter", "request p95, unlimited", "request p95, limiter"}, bvals)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
		s.Tables = append(s.Tables, bt)
	}
	seedMed := ix.median("argon2id-seed", "hash_latency")
	if !math.IsNaN(seedMed) {
		s.Answer = append(s.Answer, fmt.Sprintf("Argon2id at the seed's parameters takes %s ms per hash here, %s ms at OWASP's.",
			fmtNum(seedMed), fmtNum(ix.median("argon2id-owasp", "hash_latency"))))
	}
	if v := ix.median("signup-burst-10/limiter", "burst_time"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("10 concurrent sign-ups finish in %s ms with the limiter (%s ms unlimited); the limiter caps request p95 and memory rather than total time.",
			fmtNum(v), fmtNum(ix.median("signup-burst-10/unlimited", "burst_time"))))
	}
	for _, ref := range []string{"ward-vs-libsodium/argon2id-seed", "ward-vs-reference/argon2id-seed"} {
		if r, ok := ix.get(ref, "ratio"); ok {
			s.Answer = append(s.Answer, fmt.Sprintf("ward / %s: %sx (%s).", str(r.Params, "impl"), fmtNum(r.Median), r.Note))
		}
	}
	s.Seed = "Spring Security's Argon2 encoder: 450 ms per hash, 10 concurrent sign-ups 4.5 s; Rust argon2 via JNI: 170 ms (Intel i5-1240P, Windows 11)."
	return s, nil
}

var hsSuites = []struct{ name, label string }{
	{"x25519", "X25519"}, {"mlkem768", "ML-KEM-768"}, {"x25519+mlkem768", "X25519+ML-KEM-768"},
	{"mlkem768+mldsa65", "ML-KEM-768+ML-DSA-65"},
}

func handshakeSection(ix index) (section, error) {
	s := section{Title: "Post-quantum key exchange (seed 003)",
		Question: "What do X25519, ML-KEM, hybrid and ML-DSA-signed handshakes cost in time and bytes, and how does delay change the answer?"}
	// Time vs delay, per suite, both models (stdlib, bundled).
	var ss []series
	for _, su := range hsSuites {
		for _, model := range []string{"link", "seed"} {
			var pts plotter.XYs
			for _, d := range []int{0, 20, 75} {
				cas := fmt.Sprintf("%s/stdlib/%s/%dms", su.name, model, d)
				if strings.Contains(su.name, "mldsa") {
					cas += "/bundled"
				}
				if v := ix.median(cas, "handshake_time"); !math.IsNaN(v) {
					pts = append(pts, plotter.XY{X: float64(d), Y: v})
				}
			}
			ss = append(ss, series{name: su.label + " (" + model + " model)", points: pts, dashed: model == "seed"})
		}
	}
	var pts plotter.XYs
	for _, d := range []int{0, 20, 75} {
		if v := ix.median(fmt.Sprintf("mlkem768+mldsa65/stdlib/seed/%dms/separate", d), "handshake_time"); !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: float64(d), Y: v})
		}
	}
	ss = append(ss, series{name: "ML-KEM-768+ML-DSA-65, separate writes (seed model)", points: pts, dashed: true})
	c, err := lineChart("Handshake time vs one-way delay", "one-way delay (ms)", "ms to confirmed key", false, false, ss)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)

	// Bytes per suite: ours vs the seed's.
	var labels []string
	bv := map[string][]float64{"ward": nil, "seed (elsewhere)": nil}
	for _, q := range ix.where(func(r lab.Result) bool { return r.Source == "seed" && r.Metric == "wire_bytes" }) {
		labels = append(labels, str(q.Params, "mechanism"))
		bv["seed (elsewhere)"] = append(bv["seed (elsewhere)"], q.Median)
		ours := math.NaN()
		for _, r := range ix.where(func(r lab.Result) bool {
			return r.Source == "" && r.Metric == "wire_bytes" && str(r.Params, "mechanism") == str(q.Params, "mechanism") && num(r.Params, "bandwidth_kbit") == 0
		}) {
			if str(r.Params, "pinned_key") == "false" {
				ours = r.Median
				break
			}
		}
		bv["ward"] = append(bv["ward"], ours)
	}
	if len(labels) > 0 {
		c, err := barChart("Bytes on the wire per handshake", "bytes", labels, []string{"ward", "seed (elsewhere)"}, bv)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
	}

	// Compute per backend at 0 ms.
	cv := map[string][]float64{}
	var clabels []string
	for _, su := range []string{"x25519", "mlkem512", "mlkem768", "mlkem1024", "x25519+mlkem768", "mlkem768+mldsa65"} {
		clabels = append(clabels, su)
		for _, b := range []string{"stdlib", "circl"} {
			cas := su + "/" + b + "/seed/0ms"
			if strings.Contains(su, "mldsa") {
				cas += "/bundled"
			}
			cv[b] = append(cv[b], ix.median(cas, "client_crypto")+ix.median(cas, "server_crypto"))
		}
	}
	c, err = barChart("Cryptography time per handshake (client + server), 0 ms", "ms", clabels, []string{"stdlib", "circl"}, cv)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)

	t := table{Caption: "Seed's table shape: median ms at 0 / 20 / 75 ms one-way (seed delay model, stdlib backend, bundled), and bytes; seed's means beside",
		Head: []string{"mechanism", "ward 0 ms", "ward 20 ms", "ward 75 ms", "ward bytes", "seed 0 / 20 / 75 ms", "seed bytes"}}
	for _, q := range ix.where(func(r lab.Result) bool { return r.Source == "seed" && r.Metric == "wire_bytes" }) {
		mech := str(q.Params, "mechanism")
		row := []string{mech}
		var bytes float64 = math.NaN()
		for _, d := range []int{0, 20, 75} {
			v := math.NaN()
			for _, r := range ix.where(func(r lab.Result) bool {
				return r.Source == "" && r.Metric == "handshake_time" && str(r.Params, "mechanism") == mech && str(r.Params, "backend") == "stdlib" &&
					str(r.Params, "delay_model") == "seed" && num(r.Params, "delay_ms") == float64(d) && str(r.Params, "layout") == "bundled" &&
					str(r.Params, "pinned_key") == "false" && num(r.Params, "bandwidth_kbit") == 0
			}) {
				v = r.Median
				bytes = ix.median(r.Case, "wire_bytes")
			}
			row = append(row, fmtNum(v))
		}
		row = append(row, fmtNum(bytes))
		var seedT []string
		for _, d := range []int{0, 20, 75} {
			seedT = append(seedT, fmtNum(ix.median(fmt.Sprintf("seed/%s/%s/%dms", str(q.Params, "mode"), mech, d), "handshake_time")))
		}
		row = append(row, strings.Join(seedT, " / "), fmtNum(q.Median))
		t.Rows = append(t.Rows, row)
	}
	s.Tables = append(s.Tables, t)

	rt := table{Caption: "Ratios of median handshake times, same run", Head: []string{"comparison", "ratio"}}
	for _, r := range ix.where(func(r lab.Result) bool { return r.Metric == "ratio" }) {
		rt.Rows = append(rt.Rows, []string{r.Case, fmtNum(r.Median) + "x"})
	}
	s.Tables = append(s.Tables, rt)
	if floor, ok := ix.get("loopback-rtt", "rtt"); ok {
		s.Answer = append(s.Answer, fmt.Sprintf("Transport floor: a 1-byte loopback round trip takes %s ms here; every 0 ms handshake time includes it.", fmtNum(floor.Median)))
	}
	if v := ix.median("signed-bundled-vs-hybrid/mlkem768/seed/20ms", "ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("With the server's flight bundled, ML-DSA-signed ML-KEM-768 takes %sx the hybrid's time at 20 ms: one round trip, not two.", fmtNum(v)))
	}
	if v := ix.median("signed-separate-vs-bundled/mlkem768/seed/20ms", "ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("The seed's separate writes under its sleep-before-send model cost %sx (the seed's 2x), but only %sx on a real link model, where writes pipeline.",
			fmtNum(v), fmtNum(ix.median("signed-separate-vs-bundled/mlkem768/link/20ms", "ratio"))))
	}
	s.Seed = "Python + liboqs: X25519 0.29 ms, hybrid 0.51–0.59 ms, signed 0.71–0.77 ms at 0 ms; signed 81 ms vs 40.5 ms at 20 ms one-way; 7,549 bytes signed (ML-KEM-768)."
	return s, nil
}

var kmsMethodsOrder = []string{"legacy-aes-256-cbc-fixed-iv", "field-local-key", "kms-per-call", "envelope-cached", "envelope-per-message"}

func kmsSection(ix index) (section, error) {
	s := section{Title: "Keys in a KMS (seed 002)",
		Question: "What does keeping keys in a KMS cost per operation, and does envelope encryption with cached data keys bring it back to local speed?"}
	// Totals per 1,000 operations by method and added RTT.
	per1000 := func(m, rtt, op string) float64 {
		r, ok := ix.get(m+"/"+rtt+"/"+op, "total_time")
		if !ok {
			return math.NaN()
		}
		return r.Median * 1000 / num(r.Params, "ops")
	}
	rtts := []string{"0ms", "1ms", "8ms"}
	if _, ok := ix.get("kms-per-call/real/encrypt", "total_time"); ok {
		rtts = []string{"real"}
	}
	t := table{Caption: "Seconds per 1,000 operations (encrypt / decrypt), as the seed's table; measured over the run's operation count",
		Head: []string{"method", "where"}}
	t.Head = append(t.Head, "encrypt s", "decrypt s", "per op median ms")
	for _, m := range kmsMethodsOrder {
		where := rtts
		if m == "legacy-aes-256-cbc-fixed-iv" || m == "field-local-key" {
			where = []string{"local"}
		}
		for _, rtt := range where {
			e, d := per1000(m, rtt, "encrypt"), per1000(m, rtt, "decrypt")
			if math.IsNaN(e) {
				continue
			}
			label := rtt
			if rtt != "local" && rtt != "real" {
				label = "+" + rtt + " RTT"
			}
			t.Rows = append(t.Rows, []string{m, label, fmtNum(e), fmtNum(d), fmtNum(ix.median(m+"/"+rtt+"/encrypt", "op_latency"))})
		}
	}
	for _, q := range []string{"openssl-aes-256-cbc", "aws-kms", "aws-kms-vpc-endpoint"} {
		t.Rows = append(t.Rows, []string{"seed: " + q, "elsewhere", fmtNum(ix.median("seed/"+q+"/encrypt", "total_time")), fmtNum(ix.median("seed/"+q+"/decrypt", "total_time")), ""})
	}
	s.Tables = append(s.Tables, t)
	if rtts[0] != "real" {
		var ss []series
		for _, m := range []string{"kms-per-call", "envelope-per-message", "envelope-cached"} {
			var pts plotter.XYs
			for i, rtt := range rtts {
				if v := per1000(m, rtt, "encrypt"); !math.IsNaN(v) && v > 0 {
					pts = append(pts, plotter.XY{X: []float64{0, 1, 8}[i], Y: v})
				}
			}
			ss = append(ss, series{name: m, points: pts})
		}
		var pts plotter.XYs
		for _, x := range []float64{0, 8} {
			if v := per1000("field-local-key", "local", "encrypt"); v > 0 {
				pts = append(pts, plotter.XY{X: x, Y: v})
			}
		}
		ss = append(ss, series{name: "field-local-key (no KMS)", points: pts, dashed: true})
		c, err := lineChart("Seconds per 1,000 encryptions vs added KMS round trip", "added round trip to the KMS (ms)", "seconds (log)", false, true, ss)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
	}
	for _, r := range ix.where(func(r lab.Result) bool { return r.Metric == "speedup" }) {
		s.Answer = append(s.Answer, fmt.Sprintf("At %v added RTT, envelope encryption with cached data keys is %sx faster per operation than calling the KMS for every value.",
			r.Params["added_rtt"], fmtNum(r.Median)))
	}
	if v := ix.median("envelope-vs-field/0ms", "ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("With a warm cache, an envelope operation costs %sx a field-layer operation with a local key: KMS custody at near-local speed.", fmtNum(v)))
	}
	s.Answer = append(s.Answer, "The seed's AES-256-CBC with a fixed key and IV is shown only as a legacy baseline: it is unauthenticated and deterministic.")
	s.Seed = "Ruby, 1,000 operations: OpenSSL AES-256-CBC 0.0066 s / 0.0037 s; AWS KMS 8.04 s / 8.96 s; via a VPC endpoint 7.77 s / 7.91 s."
	return s, nil
}

var tlsCerts = []string{"ecdsa-p256", "ed25519", "rsa2048", "mldsa44", "mldsa65", "mldsa87"}
var tlsGroups = []string{"X25519", "X25519MLKEM768", "SecP256r1MLKEM768", "MLKEM1024"}

func tlsSection(ix index) (section, error) {
	s := section{Title: "Real TLS 1.3 with post-quantum key exchange and certificates",
		Question: "What do post-quantum key exchange and ML-DSA certificates cost in a real TLS 1.3 handshake, full and resumed, and what does real TLS cost over the minimal protocol?"}
	for _, d := range []string{"0ms", "20ms", "75ms"} {
		t := table{Caption: "Full handshake, median ms / server-to-client bytes, one-way delay " + d + " (link model)", Head: append([]string{"certificate chain"}, tlsGroups...)}
		for _, c := range tlsCerts {
			row := []string{c}
			for _, g := range tlsGroups {
				cas := fmt.Sprintf("%s/%s/full/%s", g, c, d)
				row = append(row, fmt.Sprintf("%s / %s", fmtNum(ix.median(cas, "handshake_time")), fmtNum(ix.median(cas, "bytes_down"))))
			}
			t.Rows = append(t.Rows, row)
		}
		s.Tables = append(s.Tables, t)
	}
	// Full vs resumed per chain at 20 ms, X25519MLKEM768.
	vals := map[string][]float64{}
	for _, c := range tlsCerts {
		for _, mode := range []string{"full", "resumed"} {
			vals[mode] = append(vals[mode], ix.median(fmt.Sprintf("X25519MLKEM768/%s/%s/20ms", c, mode), "handshake_time"))
		}
		vals["modeled full, slow start"] = append(vals["modeled full, slow start"], ix.median(fmt.Sprintf("X25519MLKEM768/%s/full/20ms", c), "modeled_time_cwnd"))
	}
	c, err := barChart("X25519MLKEM768 at 20 ms one-way: full, resumed, and full with the slow-start model", "ms", tlsCerts,
		[]string{"full", "resumed", "modeled full, slow start"}, vals)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)
	bv := map[string][]float64{}
	for _, g := range tlsGroups {
		for _, cert := range tlsCerts {
			bv[g] = append(bv[g], ix.median(fmt.Sprintf("%s/%s/full/0ms", g, cert), "bytes_down"))
		}
	}
	c, err = barChart("Server-to-client bytes per full handshake", "bytes", tlsCerts, tlsGroups, bv)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)

	mt := table{Caption: "Real TLS vs ward's minimal protocol, median ms (link model)", Head: []string{"protocol", "0 ms", "20 ms", "75 ms"}}
	for _, p := range []struct{ label, cas string }{
		{"TLS X25519 + ECDSA", "X25519/ecdsa-p256/full/%s"}, {"minimal x25519", "minimal/x25519/%s"},
		{"TLS X25519MLKEM768 + ECDSA", "X25519MLKEM768/ecdsa-p256/full/%s"}, {"minimal x25519+mlkem768", "minimal/x25519+mlkem768/%s"},
		{"TLS MLKEM1024 + ECDSA", "MLKEM1024/ecdsa-p256/full/%s"}, {"minimal mlkem1024", "minimal/mlkem1024/%s"},
		{"TLS X25519MLKEM768 + ML-DSA-65", "X25519MLKEM768/mldsa65/full/%s"}, {"minimal mlkem768+mldsa65", "minimal/mlkem768+mldsa65/%s"},
	} {
		row := []string{p.label}
		for _, d := range []string{"0ms", "20ms", "75ms"} {
			row = append(row, fmtNum(ix.median(fmt.Sprintf(p.cas, d), "handshake_time")))
		}
		mt.Rows = append(mt.Rows, row)
	}
	s.Tables = append(s.Tables, mt)
	chains := table{Caption: "Certificate chain on the wire (leaf + intermediate, DER)", Head: []string{"chain", "bytes", "slow-start extra round trips (model)"}}
	for _, cert := range tlsCerts {
		r, _ := ix.get(fmt.Sprintf("X25519MLKEM768/%s/full/20ms", cert), "modeled_time_cwnd")
		chains.Rows = append(chains.Rows, []string{cert, fmtNum(ix.median("chain/"+cert, "chain_bytes")), fmt.Sprint(r.Params["extra_round_trips"])})
	}
	s.Tables = append(s.Tables, chains)
	if v := ix.median("ward-vs-bare/X25519MLKEM768/ecdsa-p256/0ms", "time_ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("ward's measured handshake takes %sx a bare crypto/tls handshake, interleaved on loopback (X25519MLKEM768 + ECDSA): the measurement adds nothing that matters.", fmtNum(v)))
	}
	if v := ix.median("pq-kex-cost/X25519MLKEM768/ecdsa-p256/full/20ms", "time_ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("At 20 ms one-way, X25519MLKEM768 takes %sx X25519's time with an ECDSA chain and sends %sx the bytes: the round trip dominates.",
			fmtNum(v), fmtNum(ix.median("pq-kex-cost/X25519MLKEM768/ecdsa-p256/full/20ms", "bytes_ratio"))))
	}
	if v := ix.median("resumption-saving/X25519MLKEM768/mldsa65/full/20ms", "time_ratio"); !math.IsNaN(v) {
		s.Answer = append(s.Answer, fmt.Sprintf("Resumption skips the certificate and its signature: with an ML-DSA-65 chain at 20 ms it sends %sx fewer bytes but saves only %sx in time, since it still takes one round trip.",
			fmtNum(ix.median("resumption-saving/X25519MLKEM768/mldsa65/full/20ms", "bytes_ratio")), fmtNum(v)))
	}
	s.Answer = append(s.Answer, "netsim does not emulate TCP slow start; the modeled column adds the extra round trips a server flight larger than the initial window (10 × 1,460 bytes) would cost on a fresh connection.")
	s.Seed = "seed 003 planned this comparison (OpenSSL + oqs-provider) and did not run it."
	return s, nil
}

func chatSection(ix index) (section, error) {
	s := section{Title: "The encrypted chat service (seed 000)",
		Question: "What does encrypting every message cost the chat service per request?"}
	t := table{Caption: "Median request latency and requests per second, encryption off vs on (same service, SQLite, interleaved requests)",
		Head: []string{"request", "plaintext ms", "encrypted ms", "plaintext req/s", "encrypted req/s", "cost"}}
	vals := map[string][]float64{}
	var labels []string
	for _, op := range []string{"send-message", "load-conversation-50"} {
		off, on := ix.median(op+"/plaintext", "request_latency"), ix.median(op+"/encrypted", "request_latency")
		cost := ix.median(op+"/encryption-cost", "overhead")
		t.Rows = append(t.Rows, []string{op, fmtNum(off), fmtNum(on), fmtNum(ix.median(op+"/plaintext", "requests_per_second")),
			fmtNum(ix.median(op+"/encrypted", "requests_per_second")), fmtNum(cost) + " %"})
		labels = append(labels, op)
		vals["plaintext"] = append(vals["plaintext"], off)
		vals["encrypted"] = append(vals["encrypted"], on)
		if !math.IsNaN(cost) {
			s.Answer = append(s.Answer, fmt.Sprintf("%s: encryption adds %s %% per request (%s ms vs %s ms median).", op, fmtNum(cost), fmtNum(on), fmtNum(off)))
		}
	}
	s.Tables = append(s.Tables, t)
	c, err := barChart("Median request latency", "ms", labels, []string{"plaintext", "encrypted"}, vals)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)
	s.Seed = "seed 000 measured AES-GCM alone in the JVM, not its service; the service-level cost here includes HTTP, SQLite, JSON and the stand-in assistant."
	return s, nil
}
