package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wardlab/ward/lab"
)

// glance is one field report's answer on the report's first screen: a
// sentence, a small table setting the report's own figure (measured
// elsewhere) beside ward's and the report's stack's, measured here with
// their spread, whether the machine was busy, and which peers did not
// run.
type glance struct {
	ID, Title, Short, Lead string
	Table                  lab.Table
	Busy                   string
	Missing                []string
}

// glanceHead is every first-screen table's head.
var glanceHead = []string{"", "field report (elsewhere)", "ward, here (p05–p95)", "report's stack, here"}

// notRun marks a peer's cell when it did not run here.
const notRun = "not run here"

// figure formats a result scaled by scale with its unit and, measured
// here, its spread: "0.60 µs (0.58–0.63)"; "–" when absent.
func figure(rs lab.Results, cas, metric string, scale float64, unit string) string {
	r, ok := rs.Get(cas, metric)
	if !ok {
		return "–"
	}
	if unit == "x" && scale == 1 && r.Source == "" {
		return r.RatioText()
	}
	s := lab.FormatNumber(r.Median*scale) + unit
	if r.Source != lab.SourceFieldReport && r.N >= 2 {
		s += " (" + lab.FormatNumber(r.P05*scale) + "–" + lab.FormatNumber(r.P95*scale) + ")"
	}
	return s
}

// bytesFigure formats a byte count ("7,549 B"), which has no spread.
func bytesFigure(rs lab.Results, cas string) string {
	r, ok := rs.Get(cas, "wire_bytes")
	if !ok {
		return "–"
	}
	n := int64(math.Round(r.Median))
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return lab.FormatNumber(float64(n)) + " B"
}

// peerFigure is figure for a peer's result, or notRun when the scenario
// reported the peer unavailable (or has no such result).
func peerFigure(rs lab.Results, cas, metric string, scale float64, unit string) string {
	if _, ok := rs.Get(cas, metric); !ok {
		return notRun
	}
	return figure(rs, cas, metric, scale, unit)
}

// aeadGlance: what a 500-byte message costs to seal and open, with and
// without ward's layer, and the hardware factor.
func aeadGlance(rs lab.Results) (string, lab.Table) {
	const c = "AES-256-GCM/%s/500B/"
	row := func(op string) []string {
		p := fmt.Sprintf(c, op)
		return []string{"500-byte message, " + op + " (AES-256-GCM)", "–",
			figure(rs, p+"field/aes-hw-on", "time", 1e-3, " µs") + " with ward's layer; " + figure(rs, p+"raw/aes-hw-on", "time", 1e-3, " µs") + " raw",
			"–"}
	}
	t := lab.Table{Head: glanceHead, Rows: [][]string{row("seal"), row("open")}}
	hw := []string{"hardware AES factor, 500-byte seal", figure(rs, "field-report/java-aes-gcm/isolated", "hw_speedup", 1, "x") + " isolated, " +
		figure(rs, "field-report/java-aes-gcm/5M-ops", "hw_speedup", 1, "x") + " over 5M operations",
		figure(rs, fmt.Sprintf(c, "seal")+"raw/aes-hw-speedup", "hw_speedup", 1, "x"),
		notRun}
	t.Rows = append(t.Rows, hw, pythonGlanceRow(rs))
	for _, alg := range []string{"AES-256-GCM", "AES-128-GCM"} { // the JVM peer runs the report's AES-128 when asked to be quick
		p := "java-aes-gcm/" + alg + "/seal/500B/"
		if jvm, ok := rs.Get(p+"intrinsics-on", "throughput"); ok && jvm.Median > 0 {
			t.Rows[0][3] = lab.FormatNumber(500/jvm.Median) + " µs (JVM, " + alg + ", AES intrinsics)"
			t.Rows[2][3] = peerFigure(rs, p+"speedup-vs-aes-off", "hw_speedup", 1, "x") + " (JVM, " + alg + ")"
			break
		}
	}
	over, _ := rs.Get(fmt.Sprintf(c, "seal")+"field-vs-raw", "field_overhead")
	hwx, _ := rs.Get(fmt.Sprintf(c, "seal")+"raw/aes-hw-speedup", "hw_speedup")
	lead := fmt.Sprintf("a 500-byte message takes %s µs to seal with ward (%s raw AES-GCM); AES hardware: %sx here, 1.67–5.72x in the report.",
		lab.FormatNumber(rs.Median(fmt.Sprintf(c, "seal")+"field/aes-hw-on", "time")/1e3), overOf(over), lab.FormatNumber(hwx.Median))
	return lead, t
}

// overOf says what the field layer costs over raw AES-GCM, "1.24x" of it
// or "within noise of" it (lab.Result.OverheadText).
func overOf(r lab.Result) string {
	t := r.OverheadText()
	if strings.HasPrefix(t, "within noise") {
		return "within noise of"
	}
	return lab.FormatNumber(r.Median) + "x"
}

// pythonGlanceRow is what a reader in Python pays to open a message: ward's
// Python package beside Go's field layer, in the same run.
func pythonGlanceRow(rs lab.Results) []string {
	const cas = "python-field/open/500B"
	if _, ok := rs.Get(cas, "time"); !ok {
		return []string{"500-byte message, open from Python", "–", notRun + " (ward's Python package: set WARD_PYTHON)", "–"}
	}
	return []string{"500-byte message, open from Python", "–",
		figure(rs, cas, "time", 1e-3, " µs") + " with ward's Python package, " + figure(rs, "ratio/python-vs-go/open/500B", "time_ratio", 1, "x") + " Go's", "–"}
}

// passwordGlance: Argon2id here against the reports' 450 ms and 170 ms.
func passwordGlance(rs lab.Results) (string, lab.Table) {
	t := lab.Table{Head: glanceHead, Rows: [][]string{
		{"Argon2id, the report's parameters (one hash)",
			figure(rs, "field-report/spring-argon2-v5.8", "hash_latency", 1, " ms") + " (Spring), " + figure(rs, "field-report/rust-jni-argon2", "hash_latency", 1, " ms") + " (Rust over JNI)",
			figure(rs, "argon2id-report/ward", "hash_latency", 1, " ms"),
			peerFigure(rs, "jvm-bouncycastle/warm", "hash_latency", 1, " ms") + " (JVM, BouncyCastle, warm)"},
		{"10 concurrent sign-ups (the report's parameters, m=16 MiB t=2 p=1)",
			figure(rs, "field-report/spring-10-concurrent", "burst_time", 1, " ms"),
			figure(rs, "signup-burst-10/limiter", "burst_time", 1, " ms"),
			peerFigure(rs, "jvm-bouncycastle/10-concurrent", "burst_time", 1, " ms") + " (JVM)"},
	}}
	rate, params := perCore(rs, "argon2id-owasp/ward")
	t.Rows = append(t.Rows, []string{"log-ins per second per core, OWASP's parameters (" + params + ", ward's default)", "–", rate, "–"})
	r, _ := rs.Get("argon2id-report/ward", "hash_latency")
	jvm := "JVM: not run here"
	if j, ok := rs.Get("jvm-bouncycastle/warm", "hash_latency"); ok {
		jvm = "JVM here: " + lab.FormatNumber(j.Median) + " ms"
	}
	lead := fmt.Sprintf("Argon2id, the report's parameters: %s ms here with ward (%s), against 450 ms (Spring) and 170 ms (Rust); at OWASP's, a core verifies %s log-ins a second.",
		lab.FormatNumber(r.Median), jvm, strings.SplitN(rate, " ", 2)[0])
	return lead, t
}

// perCore is how many hashes of a case one core computes a second (a
// hash of parallelism 1 runs on one core: 1000 / its milliseconds), with
// the spread of its latency, and the parameters it ran, "m=19456 KiB
// t=2 p=1".
func perCore(rs lab.Results, cas string) (rate, params string) {
	r, ok := rs.Get(cas, "hash_latency")
	if !ok || r.Median <= 0 {
		return "–", "not run here"
	}
	params = fmt.Sprintf("m=%d KiB t=%d p=%d", int(lab.Num(r.Params, "m_kib")), int(lab.Num(r.Params, "t")), int(lab.Num(r.Params, "p")))
	rate = lab.FormatNumber(1000 / r.Median)
	if r.N >= 2 && r.P05 > 0 && r.P95 > 0 {
		rate += " (" + lab.FormatNumber(1000/r.P95) + "–" + lab.FormatNumber(1000/r.P05) + ")"
	}
	return rate, params
}

// kmsGlance: seconds per 1,000 values, local against KMS per call against
// envelope, at the largest round trip measured.
func kmsGlance(rs lab.Results) (string, lab.Table) {
	rtt := "0ms"
	for _, d := range []string{"8ms", "1ms"} {
		if _, ok := rs.Get("kms-per-call/"+d+"/encrypt", "s_per_1000"); ok {
			rtt = d
			break
		}
	}
	// The local key and the cached envelope compute on the measuring
	// thread, in the same rounds at +0 ms: their thread's CPU time, which a
	// busy machine does not add to (results from before it: elapsed).
	t := lab.Table{Head: glanceHead, Rows: [][]string{
		{"1,000 encryptions, local key (CPU)", figure(rs, "field-report/openssl-aes-256-cbc/encrypt", "s_per_1000", 1, " s") + " (AES-256-CBC)",
			figure(rs, "field-local-key/0ms/encrypt", cpuMetric(rs, "field-local-key/0ms/encrypt"), 1, " s"),
			peerFigure(rs, "ruby-openssl-aes-256-cbc/local/encrypt", "s_per_1000", 1, " s") + " (Ruby OpenSSL)"},
		{"1,000 encryptions, a KMS call each (+" + rtt + ")", figure(rs, "field-report/aws-kms/encrypt", "s_per_1000", 1, " s") + " (AWS KMS)",
			figure(rs, "kms-per-call/"+rtt+"/encrypt", "s_per_1000", 1, " s"), "–"},
		{"1,000 encryptions, envelope with cached data keys (CPU)", "–",
			figure(rs, "envelope-cached/0ms/encrypt", cpuMetric(rs, "envelope-cached/0ms/encrypt"), 1, " s"), "–"},
	}}
	env, _ := rs.Get("envelope-cached/0ms/encrypt", cpuMetric(rs, "envelope-cached/0ms/encrypt"))
	call, _ := rs.Get("kms-per-call/"+rtt+"/encrypt", "s_per_1000")
	lead := fmt.Sprintf("1,000 encryptions: %s s with envelope encryption (warm cache, CPU time), %s s with a KMS call each (+%s here); the report: 0.0066 s local, 8 s with AWS KMS.",
		lab.FormatNumber(env.Median), lab.FormatNumber(call.Median), rtt)
	return lead, t
}

// cpuMetric is cpu_s_per_1000 where a case has it (the kms scenario's
// local methods since the lab compares them by CPU time), else
// s_per_1000.
func cpuMetric(rs lab.Results, cas string) string {
	if _, ok := rs.Get(cas, "cpu_s_per_1000"); ok {
		return "cpu_s_per_1000"
	}
	return "s_per_1000"
}

// handshakeSuites are the first screen's suites: the report's case name
// and ward's.
var handshakeSuites = []struct{ name, report, ward string }{
	{"X25519", "field-report/x25519/X25519", "x25519/stdlib"},
	{"ML-KEM-768", "field-report/mlkem/ML-KEM-768", "mlkem768/stdlib"},
	{"X25519+ML-KEM-768", "field-report/hybrid/X25519+ML-KEM-768", "x25519+mlkem768/stdlib"},
	{"ML-KEM-768+ML-DSA-65, signed", "field-report/signed/ML-KEM-768+ML-DSA-65", "mlkem768+mldsa65/stdlib"},
}

// handshakeGlance: time at 0, 20 and 75 ms and bytes on the wire, per
// suite, here and in the report.
func handshakeGlance(rs lab.Results) (string, lab.Table) {
	t := lab.Table{Head: []string{"suite", "bytes: report → here", "0 ms: report / here", "20 ms one-way", "75 ms one-way"}}
	for _, s := range handshakeSuites {
		row := []string{s.name, bytesFigure(rs, s.report) + " → " + bytesFigure(rs, wardCase(rs, s.ward, "0ms"))}
		for _, d := range []string{"0ms", "20ms", "75ms"} {
			row = append(row, figure(rs, s.report+"/"+d, "handshake_time", 1, " ms")+" / "+figure(rs, wardCase(rs, s.ward, d), "handshake_time", 1, " ms"))
		}
		t.Rows = append(t.Rows, row)
	}
	lead := "a handshake grows from " + bytesFigure(rs, handshakeSuites[0].report) + " to " + bytesFigure(rs, handshakeSuites[3].report) + " in the report, " +
		bytesFigure(rs, wardCase(rs, handshakeSuites[0].ward, "0ms")) + " to " + bytesFigure(rs, wardCase(rs, handshakeSuites[3].ward, "0ms")) +
		" here (both ways, framed); at 20 and 75 ms one-way delays, the network, not cryptography, decides the time."
	return lead, t
}

// wardCase finds ward's case of a suite at a delay over the simulated
// sleep (the signed suite's bundled flight), "" when there is none.
func wardCase(rs lab.Results, suite, delay string) string {
	for _, c := range []string{suite + "/sleep/" + delay, suite + "/sleep/" + delay + "/bundled"} {
		if _, ok := rs.Get(c, "handshake_time"); ok {
			return c
		}
	}
	return ""
}

// shortTitles name the four answers in the first screen's list.
var shortTitles = map[string]string{"aead": "Field encryption", "password": "Password hashing", "kms": "Keys in a KMS", "handshake": "Post-quantum"}

// glanceBuilders build each field report's first-screen answer.
var glanceBuilders = map[string]func(lab.Results) (string, lab.Table){
	"aead": aeadGlance, "password": passwordGlance, "kms": kmsGlance, "handshake": handshakeGlance,
}

// firstScreen builds the first screen from each scenario's results.
func firstScreen(m lab.Manifest, by map[string]lab.Results, secs []section) []glance {
	var out []glance
	for _, id := range glanceScenarios {
		rs, ok := by[id]
		if !ok {
			continue
		}
		g := glance{ID: id, Title: id, Short: shortTitles[id]}
		for _, s := range secs {
			if s.ID == id {
				g.Title, g.Missing = s.Title, s.Missing
			}
		}
		g.Lead, g.Table = glanceBuilders[id](rs)
		g.Busy = busy(m, id)
		out = append(out, g)
	}
	return out
}

// Lead returns the first-screen sentence of a field report's scenario
// from its results alone ("" for a scenario the first screen does not
// answer), for a bench run to print as soon as the scenario ends.
func Lead(scenario string, rs lab.Results) string {
	build, ok := glanceBuilders[scenario]
	if !ok {
		return ""
	}
	lead, _ := build(rs)
	return lead
}

// busyScenarios says, for the top of the first screen, which of the four
// field reports' scenarios ran while the machine was busy ("" when none).
func busyScenarios(m lab.Manifest) string {
	var names []string
	for _, id := range glanceScenarios {
		for _, r := range m.Runs {
			if r.Name == id && r.Busy(m.Cores) {
				names = append(names, id)
			}
		}
	}
	if names == nil {
		return ""
	}
	return "Busy machine during " + strings.Join(names, ", ") + ": compare ratios, not times (details below)."
}
