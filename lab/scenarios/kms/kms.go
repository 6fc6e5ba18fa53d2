// Package kmslab is the lab scenario "kms", which reproduces the field
// report on local encryption vs a KMS: encryptions and decryptions of a
// ~500-character Japanese text with the report's legacy local cipher,
// ward's field AEAD, per-call KMS, and envelope encryption with and without
// a data-key cache, at added round-trip times of 0, 1 and 8 ms between
// client and KMS (local-kms in process, shaped by netsim), or against a
// real KMS given with --kms. Seconds per 1,000 operations come from
// repeated batches interleaved method by method, in alternating order, on
// the elapsed and the thread's CPU clock; the first operations of a
// fresh client (first KMS call, first data key) are their own rows. The
// report's own stack, Ruby's OpenSSL, runs beside them.
package kmslab

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/wardlab/ward/internal/localkms"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
	"github.com/wardlab/ward/lab/peers"
)

// Scenario is the "kms" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "kms".
func (Scenario) Name() string { return "kms" }

// Title names the topic.
func (Scenario) Title() string { return "Keys in a KMS" }

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does keeping keys in a KMS cost per operation, and does envelope encryption with cached data keys bring it back to local speed?"
}

// Text is the ~500-character Japanese message encrypted (the report used
// a few hundred characters).
var Text = func() string {
	base := "本日はお問い合わせいただきありがとうございます。ご注文の商品は明日発送予定です。"
	var b strings.Builder
	for len([]rune(b.String())) < 500 {
		b.WriteString(base)
	}
	return string([]rune(b.String())[:500])
}()

var ec = map[string]string{"app": "ward-lab", "table": "messages"}

// method encrypts and decrypts one value. kmsBound methods call the KMS
// on every value (or every data key) and are timed in smaller batches.
type method struct {
	name, label string
	kmsBound    bool
	enc         func(ctx context.Context, pt []byte) ([]byte, error)
	dec         func(ctx context.Context, ct []byte) ([]byte, error)
	fresh       func() method // a new instance with empty caches, for the cold rows
}

// caseKey names a measured case.
type caseKey struct {
	method, rtt, op string // op: encrypt or decrypt
}

func (k caseKey) name() string { return k.method + "/" + k.rtt + "/" + k.op }

// stage is the methods measured at one added round-trip time.
type stage struct {
	rtt     string
	methods []method
	close   func()
}

// vsPerCallCase and vsFieldCase are the case keys of the envelope's
// ratios at an added round trip ("0ms", "1ms", …): recorded by Run, read by
// Report and the tests.
func vsPerCallCase(rtt string) string { return "envelope-vs-per-call/" + rtt }
func vsFieldCase(rtt string) string   { return "envelope-vs-field/" + rtt }

// fieldReportCase is the case key of one of the report's figures.
func fieldReportCase(method, op string) string { return "field-report/" + method + "/" + op }

// fieldReport are the report's figures (Ruby, AWS), measured elsewhere:
// the only place they are written; the section quotes these results.
var fieldReport = func() []lab.Result {
	var out []lab.Result
	for _, q := range []struct {
		m      string
		enc, d float64
	}{{"openssl-aes-256-cbc", 0.0066, 0.0037}, {"aws-kms", 8.04, 8.96}, {"aws-kms-vpc-endpoint", 7.77, 7.91}} {
		for _, op := range []struct {
			name string
			v    float64
		}{{"encrypt", q.enc}, {"decrypt", q.d}} {
			out = append(out, lab.Quote("kms", fieldReportCase(q.m, op.name), map[string]any{"method": q.m, "op": op.name, "ops": 1000},
				"s_per_1000", "s", op.v, lab.SourceFieldReport, "Ruby, 1,000 operations on a few-hundred-character text, measured elsewhere (AWS)"))
		}
	}
	return out
}()

// Run measures every method.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	stages, cleanup, err := stages(ctx, env)
	if err != nil {
		return err
	}
	defer cleanup()
	pt := []byte(Text)
	for i, st := range stages {
		if err := measureStage(ctx, env, st, pt); err != nil {
			return err
		}
		if st.close != nil {
			st.close()
		}
		env.Progress(i+1, len(stages)+1)
	}
	rubyPeer(ctx, env)
	env.Progress(1, 1)
	env.Record(fieldReport...)
	return nil
}

// stages builds the methods per added round trip: local-kms in process
// at +0, +1 and +8 ms (the local methods measured at +0 ms, in the same
// rounds), or the real KMS of --kms.
func stages(ctx context.Context, env *lab.Env) ([]stage, func(), error) {
	local, err := localMethods()
	if err != nil {
		return nil, nil, err
	}
	if url := env.Options["kms"]; url != "" {
		newKS := func() (kms.KeyService, error) { return kmsurl.Open(ctx, url, nil) }
		ks, err := newKS()
		if err != nil {
			return nil, nil, err
		}
		return []stage{{rtt: "real", methods: append(local, kmsMethods(ks, newKS)...)}}, func() {}, nil
	}
	srv, err := localkms.Start()
	if err != nil {
		return nil, nil, err
	}
	if err := createKey(ctx, srv.Endpoint()); err != nil {
		srv.Close()
		return nil, nil, err
	}
	var out []stage
	for _, rtt := range []time.Duration{0, time.Millisecond, 8 * time.Millisecond} {
		st, err := kmsStage(ctx, srv.Addr(), rtt)
		if err != nil {
			srv.Close()
			return nil, nil, err
		}
		if rtt == 0 {
			st.methods = append(local, st.methods...)
		}
		out = append(out, st)
	}
	return out, func() { srv.Close() }, nil
}

// kmsStage puts a netsim link adding rtt in front of the local KMS.
func kmsStage(ctx context.Context, addr string, rtt time.Duration) (stage, error) {
	var px *netsim.Proxy
	if rtt > 0 {
		// Integer-millisecond toxics: split the RTT across directions.
		up, down := rtt/2, rtt-rtt/2
		if rtt == time.Millisecond {
			up, down = time.Millisecond, 0
		}
		var err error
		if px, err = netsim.Start(addr, netsim.Link{Latency: up}, netsim.Link{Latency: down}); err != nil {
			return stage{}, err
		}
		addr = px.Addr()
	}
	cfg := awskms.Config{KeyID: "alias/ward-lab", Endpoint: "http://" + addr, Region: "us-east-1", Timeout: 10 * time.Second}
	newKS := func() (kms.KeyService, error) { return awskms.New(ctx, cfg) }
	svc, err := newKS()
	if err != nil {
		return stage{}, err
	}
	st := stage{rtt: fmt.Sprintf("%dms", rtt.Milliseconds()), methods: kmsMethods(svc, newKS)}
	if px != nil {
		st.close = func() { px.Close() }
	}
	return st, nil
}

// batches returns the operations per timed batch and the rounds.
func batches(env *lab.Env, kmsBound bool) (ops, rounds int) {
	switch {
	case env.Quick && kmsBound:
		return 10, 11
	case env.Quick:
		return 1000, 11
	case kmsBound:
		return 50, 21
	}
	return 1000, 21
}

// measureStage records each method's cold first operations, then rounds
// in which every method runs one batch of encryptions and one of
// decryptions, in alternating order (A B C, then C B A); a batch's time
// scaled to 1,000 operations is one sample. Each batch is read on two
// clocks: elapsed time, what a caller waits (a KMS call is mostly
// waiting), and the measuring thread's CPU time (the goroutine is locked to
// it), which a busy neighbour does not disturb. Per-round ratios compare
// the envelope with per-call KMS by elapsed time, and with the local key,
// both computing on this thread, by CPU time (docs/LAB.md, "How the lab
// measures").
func measureStage(ctx context.Context, env *lab.Env, st stage, pt []byte) error {
	for _, m := range st.methods {
		if err := cold(ctx, env, m, st.rtt, pt); err != nil {
			return fmt.Errorf("kms %s cold: %w", m.name, err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall, cpu := map[caseKey][]float64{}, map[caseKey][]float64{}
	_, rounds := batches(env, false)
	for round := range rounds {
		for j := range st.methods {
			m := st.methods[j]
			if round%2 == 1 {
				m = st.methods[len(st.methods)-1-j]
			}
			ops, _ := batches(env, m.kmsBound)
			t, err := batch(ctx, m, pt, ops)
			if err != nil {
				return fmt.Errorf("kms %s: %w", m.name, err)
			}
			for i, op := range []string{"encrypt", "decrypt"} {
				k := caseKey{m.name, st.rtt, op}
				wall[k], cpu[k] = append(wall[k], t.wall[i]), append(cpu[k], t.cpu[i])
			}
		}
	}
	for _, m := range st.methods {
		for _, op := range []string{"encrypt", "decrypt"} {
			k := caseKey{m.name, st.rtt, op}
			ops, _ := batches(env, m.kmsBound)
			p := map[string]any{"method": m.name, "label": m.label, "op": op, "added_rtt": st.rtt, "batch_ops": ops, "bytes": len(pt)}
			env.Record(lab.FromSamples("kms", k.name(), p, "s_per_1000", "s", wall[k]))
			if !m.kmsBound {
				env.Record(lab.FromSamples("kms", k.name(), p, "cpu_s_per_1000", "s", cpu[k]))
			}
		}
	}
	recordRatios(env, st.rtt, wall, cpu)
	return nil
}

// recordRatios records the envelope's per-round ratios at one added round
// trip: per-call KMS over it by elapsed time, it over the local key by the
// thread's CPU time.
func recordRatios(env *lab.Env, rtt string, wall, cpu map[caseKey][]float64) {
	both := func(per map[caseKey][]float64, m string) []float64 {
		e, d := per[caseKey{m, rtt, "encrypt"}], per[caseKey{m, rtt, "decrypt"}]
		out := make([]float64, len(e))
		for i := range e {
			out[i] = e[i] + d[i]
		}
		return out
	}
	if len(wall[caseKey{"kms-per-call", rtt, "encrypt"}]) > 0 {
		env.Record(lab.PairedRatio("kms", vsPerCallCase(rtt), map[string]any{"added_rtt": rtt}, "speedup", both(wall, "kms-per-call"), both(wall, "envelope-cached"),
			"per-call KMS time (encrypt+decrypt, elapsed) over envelope with cached data keys, per interleaved round"))
	}
	if len(cpu[caseKey{"field-local-key", rtt, "encrypt"}]) > 0 {
		env.Record(lab.PairedRatio("kms", vsFieldCase(rtt), map[string]any{"added_rtt": rtt}, "ratio", both(cpu, "envelope-cached"), both(cpu, "field-local-key"),
			"envelope (warm cache) CPU time over ward's field AEAD with a local key (encrypt+decrypt, the measuring thread's), per interleaved round"))
	}
}

// batchTimes are a batch's seconds per 1,000 encryptions and decryptions
// ([0] and [1]), elapsed and of the measuring thread's CPU.
type batchTimes struct{ wall, cpu [2]float64 }

// batch times ops encryptions, then ops decryptions of their results,
// checking every round trip.
func batch(ctx context.Context, m method, pt []byte, ops int) (batchTimes, error) {
	var t batchTimes
	per1000 := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(ops) }
	cts := make([][]byte, ops)
	start, cpu := time.Now(), lab.ThreadCPU.Read()
	for i := range ops {
		var err error
		if cts[i], err = m.enc(ctx, pt); err != nil {
			return t, err
		}
	}
	t.wall[0], t.cpu[0] = per1000(time.Since(start)), per1000(lab.ThreadCPU.Read()-cpu)
	start, cpu = time.Now(), lab.ThreadCPU.Read()
	for i := range ops {
		out, err := m.dec(ctx, cts[i])
		if err != nil {
			return t, err
		}
		if string(out) != string(pt) {
			return t, fmt.Errorf("round trip %d does not match", i)
		}
	}
	t.wall[1], t.cpu[1] = per1000(time.Since(start)), per1000(lab.ThreadCPU.Read()-cpu)
	return t, nil
}

// cold times the first encryption and decryption of fresh instances (a
// new client's first KMS call, its first data key) as their own rows.
func cold(ctx context.Context, env *lab.Env, m method, rtt string, pt []byte) error {
	if m.fresh == nil {
		return nil
	}
	var enc, dec []float64
	for range 5 {
		f := m.fresh()
		start := time.Now()
		ct, err := f.enc(ctx, pt)
		if err != nil {
			return err
		}
		enc = append(enc, float64(time.Since(start).Microseconds())/1000)
		start = time.Now()
		if _, err := f.dec(ctx, ct); err != nil {
			return err
		}
		dec = append(dec, float64(time.Since(start).Microseconds())/1000)
	}
	for op, v := range map[string][]float64{"encrypt": enc, "decrypt": dec} {
		k := caseKey{m.name, rtt, op}
		r := lab.FromSamples("kms", k.name()+"/cold", map[string]any{"method": m.name, "op": op, "added_rtt": rtt}, "first_op", "ms", v)
		r.Note = "the first operation of a fresh client: the first KMS call or data key, not in the seconds per 1,000"
		env.Record(r)
	}
	return nil
}

// rubyPeer runs the report's own cipher, Ruby's OpenSSL AES-256-CBC with
// a fixed key and IV, on this machine.
func rubyPeer(ctx context.Context, env *lab.Env) {
	pr, err := peers.New()
	if err == nil {
		defer pr.Close()
		_, rounds := batches(env, false)
		var r peers.RubyAESCBC
		if r, err = pr.AESCBCRuby(ctx, rounds); err == nil {
			for op, v := range map[string][]float64{"encrypt": r.EncryptS, "decrypt": r.DecryptS} {
				res := lab.FromSamples("kms", caseKey{"ruby-openssl-aes-256-cbc", "local", op}.name(),
					map[string]any{"method": "ruby-openssl-aes-256-cbc", "op": op, "chars": r.TextChars, "bytes": r.TextBytes}, "s_per_1000", "s", v)
				res.Source, res.Note = lab.SourcePeer, "the report's own code: Ruby OpenSSL AES-256-CBC, fixed key and IV, 1,000 operations per round"
				env.Record(res)
			}
			return
		}
	}
	env.Record(lab.Unavailable("kms", "ruby-openssl-aes-256-cbc", lab.SourcePeer, err))
}
