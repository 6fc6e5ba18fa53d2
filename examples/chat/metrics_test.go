package chat

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"

	wardotel "github.com/wardlab/ward/contrib/otel"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/observe"
)

// TestServiceMetrics: the service under contrib/otel's observer (as
// ward-chat runs it with OTEL_METRICS_EXPORTER set) reports ward.*
// metrics — seals and opens, the key service's latency, password hashes,
// and, once it leaves the fleet, its keys' seal counts — read back with
// the SDK's in-memory reader.
func TestServiceMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	obs, err := wardotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), noop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	observe.Set(obs)
	defer observe.Set(nil)
	dir := t.TempDir()
	ta := newTestApp(t, Config{DB: "sqlite:" + filepath.Join(dir, "chat.db"), KeyringPath: filepath.Join(dir, "kr.json"),
		KeyService: local.Generate(), OnKeyUsage: obs.KeyUsage})
	c := ta.client(t)
	conv := c.signup("metrics@example.com")
	for i := range 3 {
		if code := c.do("POST", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), map[string]string{"body": fmt.Sprint("message ", i)}, nil); code != 201 {
			t.Fatalf("message %d: %d", i, code)
		}
	}
	ta.app.Close() // leaves the fleet: the last report of its seals
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	seals := int64(0)
	for _, p := range got["ward.value.operations"].(metricdata.Sum[int64]).DataPoints {
		if v, _ := p.Attributes.Value("ward.operation"); v.AsString() == "seal" {
			seals += p.Value
		}
	}
	if seals < 3 {
		t.Errorf("%d seals counted for 3 messages and their replies", seals)
	}
	for _, name := range []string{"ward.kms.call.duration", "ward.password.duration"} {
		if h, ok := got[name].(metricdata.Histogram[float64]); !ok || len(h.DataPoints) == 0 || h.DataPoints[0].Count == 0 {
			t.Errorf("%s: %+v", name, got[name])
		}
	}
	if g, ok := got["ward.key.seals"].(metricdata.Gauge[int64]); !ok || len(g.DataPoints) == 0 {
		t.Errorf("ward.key.seals: %+v", got["ward.key.seals"])
	}
}
