// Package kmslab is the lab scenario "kms", which reproduces seed 002:
// 1,000 encryptions and decryptions of a ~500-character Japanese text with
// a legacy local cipher, ward's field AEAD, per-call KMS, and envelope
// encryption with and without a data-key cache, at added round-trip times
// of 0, 1 and 8 ms between client and KMS.
package kmslab

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"strings"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/localkms"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/netsim"
)

// Scenario is the "kms" lab scenario.
type Scenario struct{}

var _ lab.Scenario = Scenario{}

// Name returns "kms".
func (Scenario) Name() string { return "kms" }

// Description says what the scenario answers.
func (Scenario) Description() string {
	return "seed 002: local cipher vs per-call KMS vs envelope encryption with cached data keys, at +0/1/8 ms RTT"
}

// Text is the ~500-character Japanese message encrypted (seed 002 used a
// few hundred characters).
var Text = func() string {
	base := "本日はお問い合わせいただきありがとうございます。ご注文の商品は明日発送予定です。"
	var b strings.Builder
	for len([]rune(b.String())) < 500 {
		b.WriteString(base)
	}
	return string([]rune(b.String())[:500])
}()

var ec = map[string]string{"app": "ward-lab", "table": "messages"}

// method encrypts and decrypts one value.
type method struct {
	name, label string
	enc         func(ctx context.Context, pt []byte) ([]byte, error)
	dec         func(ctx context.Context, ct []byte) ([]byte, error)
}

// Run measures every method.
func (Scenario) Run(ctx context.Context, env *lab.Env) error {
	ops := 1000
	if env.Quick {
		ops = 100
	}
	pt := []byte(Text)

	local, err := localMethods()
	if err != nil {
		return err
	}
	type stage struct {
		rtt     string
		methods []method
		close   func()
	}
	var stages []stage
	if url := env.Options["kms"]; url != "" {
		ks, err := kmsurl.Open(ctx, url, nil)
		if err != nil {
			return err
		}
		stages = append(stages, stage{rtt: "real", methods: kmsMethods(ks)})
	} else {
		srv, err := localkms.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		if err := createKey(ctx, srv.Endpoint()); err != nil {
			return err
		}
		for _, rtt := range []time.Duration{0, time.Millisecond, 8 * time.Millisecond} {
			addr := srv.Addr()
			var px *netsim.Proxy
			if rtt > 0 {
				// Integer-millisecond toxics: split the RTT across directions.
				up := rtt / 2
				down := rtt - up
				if rtt == time.Millisecond {
					up, down = time.Millisecond, 0
				}
				if px, err = netsim.Start(addr, netsim.Link{Latency: up}, netsim.Link{Latency: down}); err != nil {
					return err
				}
				addr = px.Addr()
			}
			svc, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward-lab", Endpoint: "http://" + addr, Region: "us-east-1", Timeout: 10 * time.Second})
			if err != nil {
				return err
			}
			st := stage{rtt: fmt.Sprintf("%dms", rtt.Milliseconds()), methods: kmsMethods(svc)}
			if px != nil {
				st.close = func() { px.Close() }
			}
			stages = append(stages, st)
		}
	}
	total := len(local) + 3*len(stages)
	done := 0
	perOp := map[string]float64{}
	run := func(m method, rtt string) error {
		r, err := measure(ctx, env, m, rtt, pt, ops)
		if err != nil {
			return fmt.Errorf("kms %s: %w", m.name, err)
		}
		perOp[m.name+"/"+rtt] = r
		done++
		env.Progress(done, total)
		return nil
	}
	for _, m := range local {
		if err := run(m, "local"); err != nil {
			return err
		}
	}
	for _, st := range stages {
		for _, m := range st.methods {
			if err := run(m, st.rtt); err != nil {
				return err
			}
		}
		if st.close != nil {
			st.close()
		}
	}
	for _, st := range stages {
		pc, ev := perOp["kms-per-call/"+st.rtt], perOp["envelope-cached/"+st.rtt]
		if pc > 0 && ev > 0 {
			env.Record(lab.Derived("kms", "envelope-vs-per-call/"+st.rtt, map[string]any{"added_rtt": st.rtt}, "speedup", "x", pc/ev,
				"median per-operation time (encrypt+decrypt) of per-call KMS over envelope with cached data keys"))
		}
	}
	if f, e := perOp["field-local-key/local"], perOp["envelope-cached/0ms"]; f > 0 && e > 0 {
		env.Record(lab.Derived("kms", "envelope-vs-field/0ms", map[string]any{"added_rtt": "0ms"}, "ratio", "x", e/f,
			"median per-operation time of envelope (warm cache) over ward's field AEAD with a local key"))
	}
	for _, q := range []struct {
		m      string
		enc, d float64
	}{{"openssl-aes-256-cbc", 0.0066, 0.0037}, {"aws-kms", 8.04, 8.96}, {"aws-kms-vpc-endpoint", 7.77, 7.91}} {
		for _, op := range []struct {
			name string
			v    float64
		}{{"encrypt", q.enc}, {"decrypt", q.d}} {
			env.Record(lab.Quote("kms", "seed/"+q.m+"/"+op.name, map[string]any{"method": q.m, "op": op.name, "ops": 1000},
				"total_time", "s", op.v, "seed", "seed 002: Ruby, 1,000 operations on a few-hundred-character text, measured elsewhere (AWS)"))
		}
	}
	return nil
}

// measure times ops encryptions, then ops decryptions of their results,
// checking every round trip, and records totals and per-operation times.
// It returns the median encrypt+decrypt time per operation in ms.
func measure(ctx context.Context, env *lab.Env, m method, rtt string, pt []byte, ops int) (float64, error) {
	cts := make([][]byte, ops)
	encMs := make([]float64, ops)
	decMs := make([]float64, ops)
	var encTotal, decTotal time.Duration
	for i := range ops {
		start := time.Now()
		ct, err := m.enc(ctx, pt)
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		cts[i], encMs[i], encTotal = ct, float64(d.Nanoseconds())/1e6, encTotal+d
	}
	for i := range ops {
		start := time.Now()
		out, err := m.dec(ctx, cts[i])
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if !bytes.Equal(out, pt) {
			return 0, fmt.Errorf("round trip %d does not match", i)
		}
		decMs[i], decTotal = float64(d.Nanoseconds())/1e6, decTotal+d
	}
	params := func(op string) map[string]any {
		return map[string]any{"method": m.name, "label": m.label, "op": op, "added_rtt": rtt, "ops": ops, "bytes": len(pt)}
	}
	for _, x := range []struct {
		op    string
		ms    []float64
		total time.Duration
	}{{"encrypt", encMs, encTotal}, {"decrypt", decMs, decTotal}} {
		cas := m.name + "/" + rtt + "/" + x.op
		s := x.total.Seconds()
		env.Record(lab.FromSamples("kms", cas, params(x.op), "op_latency", "ms", x.ms),
			lab.Derived("kms", cas, params(x.op), "total_time", "s", s, fmt.Sprintf("wall time of %d sequential operations", ops)))
	}
	_, em, _, _ := lab.Summary(encMs)
	_, dm, _, _ := lab.Summary(decMs)
	return em + dm, nil
}

// localMethods are the seed's local cipher and ward's field AEAD.
func localMethods() ([]method, error) {
	// (a) The seed's AES-256-CBC with a fixed key and IV: unauthenticated,
	// deterministic, a legacy baseline only.
	key := bytes.Repeat([]byte{0x42}, 32)
	iv := bytes.Repeat([]byte{0x24}, 16)
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	cbc := method{name: "legacy-aes-256-cbc-fixed-iv", label: "(a) AES-256-CBC, fixed key and IV: unauthenticated legacy baseline",
		enc: func(_ context.Context, pt []byte) ([]byte, error) {
			pad := aes.BlockSize - len(pt)%aes.BlockSize
			buf := append(bytes.Clone(pt), bytes.Repeat([]byte{byte(pad)}, pad)...)
			cipher.NewCBCEncrypter(blk, iv).CryptBlocks(buf, buf)
			return buf, nil
		},
		dec: func(_ context.Context, ct []byte) ([]byte, error) {
			if len(ct)%aes.BlockSize != 0 || len(ct) == 0 {
				return nil, fmt.Errorf("bad CBC length")
			}
			buf := bytes.Clone(ct)
			cipher.NewCBCDecrypter(blk, iv).CryptBlocks(buf, buf)
			pad := int(buf[len(buf)-1])
			if pad == 0 || pad > aes.BlockSize {
				return nil, fmt.Errorf("bad padding")
			}
			return buf[:len(buf)-pad], nil
		}}
	// (b) ward's field AEAD with a local key.
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		return nil, err
	}
	col, err := field.NewColumn(kr, "messages", "body")
	if err != nil {
		return nil, err
	}
	row := field.RowInt(1)
	fld := method{name: "field-local-key", label: "(b) ward field AEAD (AES-256-GCM), local key",
		enc: func(_ context.Context, pt []byte) ([]byte, error) { return col.AppendSeal(nil, row, pt) },
		dec: func(_ context.Context, ct []byte) ([]byte, error) { return col.AppendOpen(nil, row, ct) }}
	return []method{cbc, fld}, nil
}

// kmsMethods are per-call KMS and the two envelope variants over ks.
func kmsMethods(ks kms.KeyService) []method {
	cached := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
	fresh := kms.NewEnvelope(ks, kms.EnvelopeOptions{NoCache: true})
	ctxBytes := []byte("messages/body/1")
	return []method{
		{name: "kms-per-call", label: "(c) KMS Encrypt/Decrypt on every value (the seed's KMS)",
			enc: func(ctx context.Context, pt []byte) ([]byte, error) { return ks.Encrypt(ctx, pt, ec) },
			dec: func(ctx context.Context, ct []byte) ([]byte, error) { return ks.Decrypt(ctx, ct, ec) }},
		{name: "envelope-cached", label: "(d) envelope encryption, cached data keys",
			enc: func(ctx context.Context, pt []byte) ([]byte, error) { return cached.Seal(ctx, pt, ctxBytes, ec) },
			dec: func(ctx context.Context, ct []byte) ([]byte, error) { return cached.Open(ctx, ct, ctxBytes, ec) }},
		{name: "envelope-per-message", label: "(e) envelope encryption, a new data key per message",
			enc: func(ctx context.Context, pt []byte) ([]byte, error) { return fresh.Seal(ctx, pt, ctxBytes, ec) },
			dec: func(ctx context.Context, ct []byte) ([]byte, error) { return fresh.Open(ctx, ct, ctxBytes, ec) }},
	}
}

// createKey makes the lab's key and alias on a fresh local KMS.
func createKey(ctx context.Context, endpoint string) error {
	admin, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward-lab", Endpoint: endpoint, Region: "us-east-1"})
	if err != nil {
		return err
	}
	k, err := admin.Client().CreateKey(ctx, &sdk.CreateKeyInput{Description: aws.String("ward lab")})
	if err != nil {
		return fmt.Errorf("kms: creating the lab key: %w", err)
	}
	_, err = admin.Client().CreateAlias(ctx, &sdk.CreateAliasInput{AliasName: aws.String("alias/ward-lab"), TargetKeyId: k.KeyMetadata.KeyId})
	return err
}
