package wardotel

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/observe"
	"github.com/wardlab/ward/password"
)

// collect returns the reader's metrics by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum adds a counter's points whose attributes include want.
func sum(m metricdata.Metrics, want ...attribute.KeyValue) int64 {
	var n int64
	for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if has(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// count is a histogram's number of recordings.
func count(m metricdata.Metrics) uint64 {
	var n uint64
	for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		n += p.Count
	}
	return n
}

// TestMetrics: with the observer set, ward's own calls become ward.*
// metrics, read back with the SDK's in-memory reader, and key-service
// calls spans; no attribute holds a value or a row.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	o, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	if err != nil {
		t.Fatal(err)
	}
	observe.Set(o)
	defer observe.Set(nil)
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	col, _ := field.NewColumn(kr, "notes", "body")
	ct, _ := col.Seal(field.RowInt(1), []byte("a secret note"))
	col.Open(field.RowInt(1), ct)
	col.Open(field.RowInt(2), ct)
	env := kms.NewEnvelope(mk, kms.EnvelopeOptions{})
	env.Seal(ctx, []byte("v"), nil, nil)
	env.Seal(ctx, []byte("v"), nil, nil)
	h, _ := password.NewHasher(password.Policy{}, nil)
	enc, _ := h.Hash(ctx, []byte("correct horse"))
	h.Verify(ctx, []byte("correct horse"), enc)
	o.KeyUsage([]fleet.KeyUsage{{Key: kr.Primary().ID, Algorithm: keyring.AES256GCM, Seals: 4096}})

	ms := collect(t, reader)
	key := attribute.String("ward.key.id", kr.Primary().ID.String())
	if n := sum(ms["ward.value.operations"], attribute.String("ward.operation", "seal"), key); n != 1 {
		t.Errorf("seals: %d", n)
	}
	if n := sum(ms["ward.value.operations"], attribute.String("ward.operation", "open"), attribute.String("error.type", "wrong-context")); n != 1 {
		t.Errorf("opens refused for another context: %d", n)
	}
	if n := count(ms["ward.kms.call.duration"]); n != 2 { // the keyring file's wrap, the envelope's data key
		t.Errorf("KMS calls: %d", n)
	}
	if n := sum(ms["ward.kms.cache.hits"], attribute.String("ward.kms.provider", "local")); n != 1 {
		t.Errorf("cache hits: %d", n)
	}
	if n := count(ms["ward.password.duration"]); n != 2 {
		t.Errorf("password operations: %d", n)
	}
	if g := ms["ward.key.seals"].Data.(metricdata.Gauge[int64]); len(g.DataPoints) != 1 || g.DataPoints[0].Value != 4096 {
		t.Errorf("key seals: %+v", g)
	}
	if got := spans.Ended(); len(got) != 2 || got[0].Name() != "ward.kms Encrypt" || got[0].EndTime().Sub(got[0].StartTime()) <= 0 {
		t.Errorf("spans: %d", len(got))
	}
}

// TestSetup: OTEL_METRICS_EXPORTER=console prints ward.* metrics when the
// providers shut down; none (the default) gives no observer; an exporter
// this package does not build in is refused.
func TestSetup(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	o, shutdown, err := Setup(ctx, &out)
	if err != nil || o == nil {
		t.Fatal(o, err)
	}
	o.Value(observe.Value{Op: observe.Seal, Key: 0xabcd, Class: "keyring"})
	o.KMS(observe.KMSCall{Provider: "local", Op: "Decrypt"})
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ward.value.operations") || !strings.Contains(out.String(), "ward.kms Decrypt") {
		t.Fatalf("console output: %.400s", out.String())
	}
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	if o, _, err := Setup(ctx, &out); o != nil || err != nil {
		t.Fatalf("no exporter named: %v %v", o, err)
	}
	t.Setenv("OTEL_METRICS_EXPORTER", "zipkin")
	if _, _, err := Setup(ctx, &out); err == nil || !strings.Contains(err.Error(), "console, otlp or none") {
		t.Fatalf("an unknown exporter: %v", err)
	}
}
